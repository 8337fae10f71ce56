// typescript-eslint's recommended rules over the repository's TypeScript and JavaScript (`npm run lint`, which
// `npm test` runs). Layout is prettier's (.prettierrc.json); this checks what a formatter cannot.
import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

export default tseslint.config(
  // Generated (npm run schema / sdks / docs), built or installed: as in .prettierignore.
  { ignores: ["dist/", "node_modules/", "sdks/", "schema/", "docs/reference/", ".state/", ".*-examples-*/"] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2022, globals: globals.node },
    // An eslint-disable comment that suppresses nothing is an error: each one left says what it allows.
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      // `const { token: _token, ...rest } = x` drops a field; `_` marks a name kept unused on purpose.
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrorsIgnorePattern: "^_" },
      ],
    },
  },
  // The scripts, the bench and the policy-pack template are CommonJS that node runs as it is: require is
  // their import.
  {
    files: ["**/*.js"],
    languageOptions: { sourceType: "commonjs" },
    // A module's own `const crypto = require("node:crypto")` shadows the global of that name in that module only.
    rules: { "@typescript-eslint/no-require-imports": "off", "no-redeclare": ["error", { builtinGlobals: false }] },
  },
  // Tests and the bench read JSON they did not type (the emulator's answers, Pulumi's state and stack
  // outputs, the bench's rows) and assert its shape themselves; `any` there is that JSON.
  { files: ["test/**", "bench/**"], rules: { "@typescript-eslint/no-explicit-any": "off" } },
);
