// The one set of ajv options for the kinds' validators: compiled at run time (validate.ts) and
// ahead of time at build (bin/kind-validators.mjs) alike.
export const AJV_OPTIONS = {
  allErrors: true,
  strict: false,
  useDefaults: true,
  verbose: true,
  // the kinds' schemas are svc's own (TypeBox), checked by its tests; checking them against the
  // meta-schema at every start was ~40% of the compile `svc config validate` waits for
  validateSchema: false,
} as const;
