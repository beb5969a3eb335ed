// Task inference (issue 13): is the label column a class or a number to predict?
//
// Rules (docs/DATA.md, "Task"): a target whose filled cells are all numbers is regression when some value
// has a fraction, when it has more than 20 distinct integers, or when it has 5 to 20 distinct integers most
// of which are seen once (a small table's amounts); other integers, text or booleans are classes. The reason is always given, e.g. "price: 4,998 distinct numbers → regression".
// A classifier with more than 200 classes is refused; one whose classes mostly have a single example gets
// a warning (it trains, but cannot learn those classes).
import { formatCount } from './columnReport';
import { parseStrictNumber } from './numbers';

export type Task = 'classification' | 'regression';

export const maxClassificationIntegers = 20;
export const maxClasses = 200;

export interface TaskChoice {
  task: Task;
  reason: string;
}

/** From this many distinct integers on, a label whose values are mostly seen once is an amount, not classes. */
export const minIntegersForAmounts = 5;

/**
 * The task for a label column from its distinct filled texts (and how often each occurs, `counts[i]` for
 * `texts[i]`, when known); `given` (CsvOptions.task) wins.
 */
export function inferTask(name: string, texts: readonly string[], given?: Task, counts?: readonly number[]): TaskChoice {
  const shape = targetShape(texts);
  if (given !== undefined) return { task: given, reason: `${name}: ${given} as chosen (${describeShape(shape)})` };
  if (shape.numbers === texts.length && texts.length > 0) {
    if (shape.fractional) return { task: 'regression', reason: `${name}: ${formatCount(shape.distinctNumbers)} distinct numbers, some with a fraction → regression` };
    if (shape.distinctNumbers > maxClassificationIntegers) {
      return { task: 'regression', reason: `${name}: ${formatCount(shape.distinctNumbers)} distinct numbers → regression` };
    }
    // A small table's amounts (19 rows of prices): classes of one example each could not be learned anyway.
    const seenOnce = counts === undefined ? 0 : counts.filter((count) => count === 1).length;
    if (shape.distinctNumbers >= minIntegersForAmounts && seenOnce > texts.length / 2) {
      return { task: 'regression', reason: `${name}: ${formatCount(shape.distinctNumbers)} distinct integers, ${formatCount(seenOnce)} of them seen once → regression` };
    }
    return { task: 'classification', reason: `${name}: ${formatCount(shape.distinctNumbers)} distinct integers → classification` };
  }
  return { task: 'classification', reason: `${name}: ${formatCount(texts.length)} distinct ${shape.numbers > 0 ? 'values (text and numbers)' : 'text values'} → classification` };
}

interface TargetShape {
  numbers: number;
  distinctNumbers: number;
  fractional: boolean;
  textCount: number;
}

function targetShape(texts: readonly string[]): TargetShape {
  const values = new Set<number>();
  let numbers = 0;
  let fractional = false;
  for (const text of texts) {
    const value = parseStrictNumber(text);
    if (Number.isNaN(value)) continue;
    numbers++;
    values.add(value);
    if (!Number.isInteger(value)) fractional = true;
  }
  return { numbers, distinctNumbers: values.size, fractional, textCount: texts.length };
}

function describeShape(shape: TargetShape): string {
  if (shape.numbers === shape.textCount) return `${formatCount(shape.distinctNumbers)} distinct numbers`;
  return `${formatCount(shape.textCount)} distinct values`;
}

/**
 * Problems with a classification target: a refusal (more than 200 classes) and warnings (most classes with a
 * single example). `counts` are the examples per class.
 */
export function checkClasses(name: string, texts: readonly string[], counts: readonly number[]): { refusal?: string; warnings: string[] } {
  const numeric = texts.length > 0 && texts.every((text) => !Number.isNaN(parseStrictNumber(text)));
  if (texts.length > maxClasses) {
    return {
      refusal: `the label column ${name} has ${formatCount(texts.length)} classes, more than ${maxClasses} for a classifier; ` +
        (numeric ? 'its values are numbers: use --task regression to predict them' : 'is it an ID or free text? choose another column with --label-column'),
      warnings: [],
    };
  }
  const single = counts.filter((count) => count === 1).length;
  const warnings: string[] = [];
  if (texts.length >= 3 && single > texts.length / 2) {
    warnings.push(`${single} of the ${texts.length} classes of ${name} have a single example: a model cannot learn a class from one example` +
      (numeric ? ' (use --task regression if the values are amounts)' : ''));
  }
  const alike = classesAlikeButCase(texts);
  if (alike.length > 0) {
    warnings.push(`classes of ${name} that differ only in upper and lower case are different classes: ${alike.join('; ')} (correct the file if they mean the same)`);
  }
  return { warnings };
}

/** Groups of class texts equal but for case ("Yes / yes"), the first 3 groups; a typo a model would learn as a class. */
function classesAlikeButCase(texts: readonly string[]): string[] {
  const byFolded = new Map<string, string[]>();
  for (const text of texts) {
    const folded = text.toLocaleLowerCase('en-US');
    byFolded.set(folded, [...(byFolded.get(folded) ?? []), text]);
  }
  const groups = [...byFolded.values()].filter((group) => group.length > 1).map((group) => group.join(' / '));
  return groups.length > 3 ? [...groups.slice(0, 3), `${groups.length - 3} more`] : groups;
}
