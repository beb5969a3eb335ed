// A ZIP of an image folder (app/core/data/zipFolder.ts): which entries are images and where they go, the one
// top folder taken as the folder itself, and the paths refused (climbing out, absolute, too deep).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkZipSize, entryText, maxZipDepth, zipFolderLayout, ZipFolderError } from '../../../app/core/data/zipFolder';

describe('zipFolderLayout', () => {
  test('a zipped folder: its top folder is the folder (and the name); hidden files and __MACOSX are left out', () => {
    const layout = zipFolderLayout('/tmp/upload/photos.zip', [
      'digits/', 'digits/zero/', 'digits/zero/a.png', 'digits/one/b.JPG', 'digits/one/notes.txt', 'digits/.DS_Store',
      '__MACOSX/digits/zero/._a.png', 'digits/one/sub/c.webp',
    ]);
    assert.equal(layout.name, 'digits');
    assert.deepEqual(layout.images, [
      { entry: 'digits/zero/a.png', path: 'zero/a.png' },
      { entry: 'digits/one/b.JPG', path: 'one/b.JPG' },
      { entry: 'digits/one/sub/c.webp', path: 'one/sub/c.webp' },
    ]);
  });

  test('a zipped folder with stray files beside its class folders is still unwrapped', () => {
    const layout = zipFolderLayout('photos.zip', ['photos/README.md', 'photos/cover.png', 'photos/un/a.png', 'photos/deux/b.gif']);
    assert.equal(layout.name, 'photos');
    assert.deepEqual(layout.images.map((place) => place.path), ['cover.png', 'un/a.png', 'deux/b.gif'], 'the loose image stays loose (left out with a note)');
  });

  test('names without the UTF-8 flag (read as Latin-1) come back as their UTF-8; real Latin-1 names stay', () => {
    // Info-ZIP's zip stores "zéro 0" as UTF-8 bytes without the flag: fflate gives them one character each
    const layout = zipFolderLayout('photos.zip', ['photos/z\u00c3\u00a9ro 0/a.png', 'photos/caf\u00e9/b.png', 'photos/un/c.png']);
    assert.deepEqual(layout.images.map((place) => place.path), ['zéro 0/a.png', 'café/b.png', 'un/c.png']);
    assert.equal(layout.images[0].entry, 'photos/z\u00c3\u00a9ro 0/a.png', 'the entry keeps the name the ZIP is read by');
    assert.equal(entryText('Deux (2)/a.png'), 'Deux (2)/a.png');
    assert.equal(entryText('日本/a.png'), '日本/a.png', 'a name already decoded (the UTF-8 flag) stays');
  });

  test('class folders at the top: the ZIP is the folder, named after the file', () => {
    const layout = zipFolderLayout('C:\\data\\Pets.ZIP', ['cats/1.png', 'dogs\\2.bmp']);
    assert.equal(layout.name, 'Pets');
    assert.deepEqual(layout.images.map((place) => place.path), ['cats/1.png', 'dogs/2.bmp']);
  });

  test('one folder of loose images at the top stays a class folder (it is not unwrapped)', () => {
    const layout = zipFolderLayout('cats.zip', ['cats/1.png', 'cats/2.png']);
    assert.equal(layout.name, 'cats');
    assert.deepEqual(layout.images.map((place) => place.path), ['cats/1.png', 'cats/2.png']);
  });

  test('paths that leave the folder, absolute paths and deep nesting are refused, naming the ZIP and the entry', () => {
    assert.throws(() => zipFolderLayout('evil.zip', ['a/../../etc/passwd.png']),
      (error: unknown) => error instanceof ZipFolderError && /^evil\.zip: holds a path that leaves the folder \(a\/\.\.\/\.\.\/etc\/passwd\.png\)/.test(error.message));
    assert.throws(() => zipFolderLayout('evil.zip', ['/etc/x.png']), /evil\.zip: holds an absolute path/);
    assert.throws(() => zipFolderLayout('evil.zip', ['C:/x.png']), /evil\.zip: holds an absolute path/);
    const deep = `${Array.from({ length: maxZipDepth + 1 }, (_, i) => `d${i}`).join('/')}/x.png`;
    assert.throws(() => zipFolderLayout('deep.zip', ['top/', deep, 'other/y.png']), /deep\.zip: .* is more than 8 folders deep/);
    assert.throws(() => zipFolderLayout('empty.zip', ['a/', '.hidden']), /empty\.zip: holds no files/);
  });

  test('a ZIP that would unpack to more than the limit is refused before unpacking', () => {
    assert.doesNotThrow(() => checkZipSize('ok.zip', 1000, 1000));
    assert.throws(() => checkZipSize('bomb.zip', 5 * 1024 ** 3), /bomb\.zip: unpacks to 5\.0 GiB, more than the 4\.0 GiB/);
  });
});
