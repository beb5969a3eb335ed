// A drawing made into an MNIST-style 28x28 digit, the way MNIST's digits were made: the ink's bounding box
// scaled to fit 20x20 (aspect kept, area-averaged), then placed in 28x28 so that its centre of mass sits
// at the centre. Pure functions on grey values, so they run the same in a test as on a canvas.

export const digitSide = 28;
const fitSide = 20;
/** Grey values at or below this (0-1) count as background when finding the ink. */
const inkThreshold = 0.05;

/** The grey value (0-1) of each pixel of an RGBA image drawn light on dark (the red channel). */
export function greyOf(rgba: ArrayLike<number>, width: number, height: number): Float32Array {
  const grey = new Float32Array(width * height);
  for (let i = 0; i < grey.length; i++) grey[i] = rgba[i * 4] / 255;
  return grey;
}

/** 784 values 0-255 (row-major), all zero when nothing is drawn. */
export function mnistPixels(grey: ArrayLike<number>, width: number, height: number): number[] {
  return drawnPixels(grey, width, height, digitSide, digitSide);
}

/**
 * The drawing as an outHeight x outWidth image (0-255, row-major) made the MNIST way: the ink fitted to
 * 20/28 of each side, its centre of mass at the centre. For a model of any single-channel image size.
 */
export function drawnPixels(grey: ArrayLike<number>, width: number, height: number, outHeight: number, outWidth: number): number[] {
  const out = new Array<number>(outHeight * outWidth).fill(0);
  let left = width, right = -1, top = height, bottom = -1;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (grey[y * width + x] > inkThreshold) {
        if (x < left) left = x;
        if (x > right) right = x;
        if (y < top) top = y;
        if (y > bottom) bottom = y;
      }
    }
  }
  if (right < 0) return out;

  const boxWidth = right - left + 1;
  const boxHeight = bottom - top + 1;
  const scale = Math.min((outWidth * fitSide) / digitSide / boxWidth, (outHeight * fitSide) / digitSide / boxHeight);
  const smallWidth = Math.max(1, Math.round(boxWidth * scale));
  const smallHeight = Math.max(1, Math.round(boxHeight * scale));
  const small = new Float32Array(smallWidth * smallHeight);
  for (let ty = 0; ty < smallHeight; ty++) {
    const y0 = top + ty / scale;
    const y1 = top + (ty + 1) / scale;
    for (let tx = 0; tx < smallWidth; tx++) {
      const x0 = left + tx / scale;
      const x1 = left + (tx + 1) / scale;
      small[ty * smallWidth + tx] = areaAverage(grey, width, height, x0, x1, y0, y1);
    }
  }

  // Centre of mass of the scaled digit, moved to the middle of 28x28 (kept inside the frame).
  let mass = 0, sumX = 0, sumY = 0;
  for (let y = 0; y < smallHeight; y++) {
    for (let x = 0; x < smallWidth; x++) {
      const value = small[y * smallWidth + x];
      mass += value;
      sumX += value * (x + 0.5);
      sumY += value * (y + 0.5);
    }
  }
  const centreX = mass > 0 ? sumX / mass : smallWidth / 2;
  const centreY = mass > 0 ? sumY / mass : smallHeight / 2;
  const clamp = (value: number, max: number) => Math.max(0, Math.min(max, value));
  const offsetX = clamp(Math.round(outWidth / 2 - centreX), outWidth - smallWidth);
  const offsetY = clamp(Math.round(outHeight / 2 - centreY), outHeight - smallHeight);
  for (let y = 0; y < smallHeight; y++) {
    for (let x = 0; x < smallWidth; x++) {
      out[(y + offsetY) * outWidth + x + offsetX] = Math.round(255 * Math.min(1, small[y * smallWidth + x]));
    }
  }
  return out;
}

/** The mean of the source over [x0,x1) x [y0,y1), each source pixel weighted by how much of it lies inside. */
function areaAverage(grey: ArrayLike<number>, width: number, height: number, x0: number, x1: number, y0: number, y1: number): number {
  let total = 0;
  let area = 0;
  for (let y = Math.floor(y0); y < Math.min(height, Math.ceil(y1)); y++) {
    const coverY = Math.min(y + 1, y1) - Math.max(y, y0);
    for (let x = Math.floor(x0); x < Math.min(width, Math.ceil(x1)); x++) {
      const cover = coverY * (Math.min(x + 1, x1) - Math.max(x, x0));
      total += cover * grey[y * width + x];
      area += cover;
    }
  }
  return area > 0 ? total / area : 0;
}
