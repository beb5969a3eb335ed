// Where keyboard focus goes after an action that replaces what had it (the Open button, a Next button, the
// Start button) or shows something new (a dataset, a run's outcome, a confusion cell's examples): the new
// thing's heading or primary button, scrolled into view, so focus never drops to the page body.
import { tick } from 'svelte';

/** Smooth scrolling unless the user asked for reduced motion. */
function scrollBehavior(): ScrollBehavior {
  return window.matchMedia('(prefers-reduced-motion: reduce)').matches ? 'auto' : 'smooth';
}

/**
 * After the DOM has updated, focuses the element with this id (a heading needs tabindex="-1") and scrolls it
 * to the top of its scrolling area; with several ids, the first one on the page. Does nothing when none is
 * there (the user went elsewhere).
 */
let latestRequest = 0;

export async function focusById(ids: string | string[], block: ScrollLogicalPosition = 'start'): Promise<void> {
  // Two requests in one update (a new screen and the result shown on it): the later one wins.
  const request = ++latestRequest;
  await tick();
  if (request !== latestRequest) return;
  const element = (Array.isArray(ids) ? ids : [ids]).map((id) => document.getElementById(id)).find((found) => found !== null);
  if (!element) return;
  element.scrollIntoView({ block, behavior: scrollBehavior() });
  element.focus({ preventScroll: true });
}

/** Whether nothing on the page has focus (it dropped to the body, e.g. because its button went away). */
export function focusIsLost(): boolean {
  const active = document.activeElement;
  return active === null || active === document.body;
}
