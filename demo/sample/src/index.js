// textkit: small string helpers. The entry point re-exports every helper.
export const VERSION = '0.1.0';
