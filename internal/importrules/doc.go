// Package importrules holds no code: its test checks the module's import
// graph against the package picture of docs/design.md ("Packages and the
// direction of dependencies").
package importrules
