// Types of scripts/checkout-bundle.mjs, plain JavaScript so that it runs before anything compiles TypeScript.

export declare const BUNDLED_SCRIPTS: readonly ['execute', 'plan'];
export declare function bundleScripts(root: string, outdir: string): Promise<void>;
export declare function makeCheckoutBundle(root: string): Promise<void>;
