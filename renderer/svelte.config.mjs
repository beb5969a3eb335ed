// svelte-check and the Vite plugin read this: TypeScript in <script lang="ts">.
import { vitePreprocess } from '@sveltejs/vite-plugin-svelte';

export default { preprocess: vitePreprocess() };
