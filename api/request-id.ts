// The request id: a sane client-sent X-Request-Id is echoed (so callers can correlate), else one
// is made. It is returned in X-Request-Id and written to the audit entry.
import { uniqueId } from "../engines/ids";

const SANE = /^[\w.:-]{1,128}$/;

export function requestIdFor(sent: string | string[] | undefined): string {
  return typeof sent === "string" && SANE.test(sent) ? sent : uniqueId("req_");
}
