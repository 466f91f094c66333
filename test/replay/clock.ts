// The replay tests send a day's traffic hour by hour on the settable test clock (test/helpers/clock.ts).
export { installClock, realNow, setNow } from "../helpers/clock";
