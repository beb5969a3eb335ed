// The UI API (DESIGN §5): channels `namespace:method`, payloads validated with zod, errors as values.
// Node side only; a renderer imports `./types` (types only) instead.
export { createApi, type Api, type ApiOptions } from './session';
export { channels, isChannel, payloadSchemas, maxUploadBase64Chars } from './schemas';
export type * from './types';
