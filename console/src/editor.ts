import { json } from "@codemirror/lang-json";
import { defaultHighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { lintGutter, setDiagnostics, type Diagnostic } from "@codemirror/lint";
import { EditorState, type Extension } from "@codemirror/state";
import { EditorView } from "@codemirror/view";
import { classHighlighter } from "@lezer/highlight";
import { basicSetup } from "codemirror";

export interface Editor {
  view: EditorView;
  text(): string;
  setText(text: string): void;
  /** Underlines problems; `line` and `column` are 1-based as the API reports them. */
  mark(problems: { line: number; column: number; message: string }[]): void;
  clearMarks(): void;
}

/**
 * A CodeMirror 6 editor named for assistive technology. Tab is left to the browser (CodeMirror's
 * default), so keyboard users move through the page and are never trapped in an editor;
 * Ctrl-] and Ctrl-[ indent; Ctrl-Space completes where the language completes.
 */
export function createEditor(
  parent: HTMLElement,
  label: string,
  options: { json?: boolean; language?: Extension; text?: string; onChange?: () => void } = {},
): Editor {
  const extensions: Extension[] = [
    basicSetup,
    // The default colours (no longer a fallback once another highlighter is on), and stable
    // `tok-<tag>` classes beside them: a token's kind can be read from the page.
    syntaxHighlighting(defaultHighlightStyle),
    syntaxHighlighting(classHighlighter),
    lintGutter(),
    EditorView.contentAttributes.of({ "aria-label": label }),
    EditorView.lineWrapping,
  ];
  if (options.json === true) extensions.push(json());
  if (options.language !== undefined) extensions.push(options.language);
  if (options.onChange !== undefined) {
    const onChange = options.onChange;
    extensions.push(EditorView.updateListener.of((update) => update.docChanged && onChange()));
  }
  const view = new EditorView({ state: EditorState.create({ doc: options.text ?? "", extensions }), parent });
  const editor: Editor = {
    view,
    text: () => view.state.doc.toString(),
    setText(text) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
    },
    mark(problems) {
      const doc = view.state.doc;
      const diagnostics: Diagnostic[] = problems.map((p) => {
        const line = doc.line(Math.min(Math.max(p.line, 1), doc.lines));
        const from = Math.min(line.from + Math.max(p.column - 1, 0), line.to);
        // Underline from the column to the end of its word (at least one character) so it is visible.
        const rest = doc.sliceString(from, line.to);
        const length = Math.max(1, rest.match(/^[^\s]*/)?.[0].length ?? 1);
        return { from, to: Math.min(from + length, Math.max(line.to, from + 1), doc.length), severity: "error", message: p.message };
      });
      view.dispatch(setDiagnostics(view.state, diagnostics));
    },
    clearMarks() {
      view.dispatch(setDiagnostics(view.state, []));
    },
  };
  return editor;
}
