/** The JSONata names the rewrite gives the extension forms of one text (without the leading `$`). */
export interface GeneratedNames {
  /** The bound function `result(?label) { … }` becomes. */
  result: string;
  /** The variable `${name}` becomes. */
  param(name: string): string;
}

/**
 * Names no name of the text can be: every generated name contains `__result<tag>` or
 * `__param<tag>`, with the tag (none, then 1, 2, …) chosen so that neither occurs anywhere in the
 * text. A transform can therefore neither shadow nor read them by accident.
 */
export function generatedNames(text: string): GeneratedNames {
  let tag = "";
  for (let n = 1; text.includes(`__result${tag}`) || text.includes(`__param${tag}`); n++) tag = String(n);
  return { result: `__result${tag}`, param: (name) => `__param${tag}_${name}` };
}
