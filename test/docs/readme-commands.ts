/** The commands a Markdown document tells its reader to run. */

const COMMAND = /^(make|kubectl|node|npm|npx|helm|bash|kubectl-canaryapp|lua5\.1)(\s|$)/;

/**
 * Every line of a `sh`/`bash`/`console` code block (less trailing `# comments` and `$ ` prompts), and every
 * inline code span that starts with a command name and has its arguments (`make …`, `kubectl VERB KIND …`,
 * `node …`), in order, once each.
 */
export function readmeCommands(markdown: string): string[] {
  const found: string[] = [];
  const add = (text: string) => {
    const command = text
      .replace(/^\$\s+/, "")
      .replace(/\s+#\s.*$/, "")
      .trim();
    // Prose names a tool or a verb in passing (`kubectl`, `kubectl patch`); a command has its arguments.
    const words = command.split(/\s+/).length;
    const minimum = command.startsWith("kubectl ") ? 3 : 2;
    if (COMMAND.test(command) && words >= minimum && !found.includes(command)) found.push(command);
  };
  let fence: string | undefined;
  for (const line of markdown.split("\n")) {
    const open = /^\s*```(\w*)/.exec(line);
    if (open) {
      fence = fence === undefined ? (open[1] ?? "") : undefined;
      continue;
    }
    if (fence !== undefined) {
      if (["sh", "bash", "shell", "console"].includes(fence)) add(line);
      continue;
    }
    for (const span of line.matchAll(/`([^`]+)`/g)) add((span[1] ?? "").replaceAll("\\|", "|"));
  }
  return found;
}
