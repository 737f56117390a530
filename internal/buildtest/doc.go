// Package buildtest holds a test that builds gtrace exactly as the
// README's quick start says and checks that the binary is static.
package buildtest
