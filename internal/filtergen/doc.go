// Package filtergen generates event filters from the filter grammar for
// differential tests: every comparison operator on every field class,
// every glob form, logical operators, parentheses and each way of writing
// a literal, with constants chosen near the values of sample records so
// that a filter passes some of them and not others. Features names what
// a filter exercises, so that a test can check that a run covered the
// language.
package filtergen
