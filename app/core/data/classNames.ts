// Names for classes whose files only number them (IDX labels, the built-in MNIST): "T-shirt,Trouser,..." for
// Fashion-MNIST's 0..9. A renamed dataset keeps the file's own label of each class (`labelValues`), so a model
// trained on it reads another IDX file of the same kind by those values and still shows the names.
import type { Dataset } from './dataset';

/** The most characters one class name may have (a name is shown in tables and matrix headers). */
export const maxClassNameLength = 100;

/** `a, b ,c` → ['a', 'b', 'c']: names separated by commas, trimmed (not yet checked; see checkClassNames). */
export function splitClassNames(text: string): string[] {
  return text.split(',').map((name) => name.trim());
}

/**
 * Why these names cannot name `classCount` classes, or undefined when they can: one per class, none empty,
 * none repeated, none too long. The message is plain language for the Data screen and the CLI alike.
 */
export function classNamesProblem(names: readonly string[], classCount: number): string | undefined {
  if (names.length !== classCount) {
    return `${classCount} class name${classCount === 1 ? '' : 's'} needed (one per class), got ${names.length}`;
  }
  const empty = names.findIndex((name) => name.trim() === '');
  if (empty >= 0) return `class ${empty + 1} has an empty name`;
  const long = names.findIndex((name) => name.length > maxClassNameLength);
  if (long >= 0) return `the name of class ${long + 1} is longer than ${maxClassNameLength} characters`;
  const seen = new Map<string, number>();
  for (const [index, name] of names.entries()) {
    const first = seen.get(name.trim());
    if (first !== undefined) return `classes ${first + 1} and ${index + 1} are both named "${name.trim()}"`;
    seen.set(name.trim(), index);
  }
  return undefined;
}

/**
 * The dataset with its classes named `names` (in the classes' order: names[k] for class k). The file's own
 * labels stay in `labelValues`; renaming a renamed dataset again keeps the first values. Throws the
 * problem (see classNamesProblem) prefixed by `where`.
 */
export function renameClasses(dataset: Dataset, names: readonly string[], where: string): Dataset {
  const problem = classNamesProblem(names, dataset.classLabels.length);
  if (problem) throw new Error(`${where}: ${problem} (classes now: ${dataset.classLabels.join(', ')})`);
  const trimmed = names.map((name) => name.trim());
  const labelValues = dataset.labelValues ?? dataset.classLabels;
  // Names equal to the file's own labels are no renaming: nothing to remember.
  const same = trimmed.every((name, i) => name === labelValues[i]);
  const { labelValues: _dropped, ...rest } = dataset;
  return same ? { ...rest, classLabels: trimmed } : { ...rest, classLabels: trimmed, labelValues: [...labelValues] };
}

/**
 * A dataset read with a file's own labels ("0".."9"), renamed as a model's classes were: each class whose
 * label is one of `labelValues` takes the name at the same place in `names`. A label the model never saw
 * keeps its text (matching it to the model's classes then reports it).
 */
export function nameClassesLike(dataset: Dataset, labelValues: readonly string[], names: readonly string[]): Dataset {
  const byValue = new Map(labelValues.map((value, i) => [value, names[i]]));
  return { ...dataset, classLabels: dataset.classLabels.map((label) => byValue.get(label) ?? label) };
}
