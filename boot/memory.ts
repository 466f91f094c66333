// Young-generation sizing around start-up (issue 43, memory at rest): engines/young-gen.ts holds
// it at its size while svc loads; a server releases the start-up hold once ready.
export { startupOver } from "../engines/young-gen";
