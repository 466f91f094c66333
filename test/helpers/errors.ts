// An engine error as a client sees it over HTTP (status, code, message, param): engines raise
// SvcError without HTTP, api/errors.ts maps it. Tests that call an engine directly assert on this.
import { SvcError } from "../../engines/errors";
import { statusOf } from "../../api/errors";

export function httpView(e: unknown): { status: number; code: string; message: string; param: string | null } {
  if (!(e instanceof SvcError)) throw e;
  return { status: statusOf(e), code: e.code, message: e.message, param: e.param };
}
