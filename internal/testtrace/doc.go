// Package testtrace makes trace.dat files for tests from the project's own
// writer (it imports pkg/tracedat, so tracedat's own tests cannot use it).
package testtrace
