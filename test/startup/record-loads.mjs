// `node --import ./record-loads.mjs …`: appends the URL of every module the process loads, one a
// line, to the file named by SVC_RECORD_LOADS (test/startup/lazy-loading.test.ts reads it).
import { register } from "node:module";

register("./record-loads-hooks.mjs", import.meta.url, { data: { file: process.env.SVC_RECORD_LOADS } });
