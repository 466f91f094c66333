// Exit codes (docs/cli.md, docs/architecture.md): 0 done / no change, 1 failed, 2 changes pending, 3 confirmation needed.
export const EXIT = { ok: 0, failed: 1, pending: 2, confirm: 3 } as const;

/** An expected failure: its message is printed as it is (no stack trace) and the process exits with `code`. */
export class CliError extends Error {
  constructor(message: string, readonly code: number = EXIT.failed) {
    super(message);
    this.name = "CliError";
  }
}
