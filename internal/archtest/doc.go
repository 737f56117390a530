// Package archtest holds a test that keeps gtrace's package imports
// pointing the way the style guide draws them.
package archtest
