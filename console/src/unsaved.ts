/**
 * The unsaved-edit guard of a definition screen: remembers the text as shown, and before another
 * definition replaces it, asks whether to discard the edits made since (a native confirm dialog,
 * keyboard operable and announced).
 */
export function unsavedGuard(current: () => string): { shown(): void; mayLeave(what: string): boolean } {
  let baseline: string | undefined;
  return {
    shown() {
      baseline = current();
    },
    mayLeave(what) {
      return baseline === undefined || current() === baseline || window.confirm(`Discard the unsaved changes to ${what}?`);
    },
  };
}
