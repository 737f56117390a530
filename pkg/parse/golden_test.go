package parse

import "flag"

// update is -update: rewrite the golden files under testdata/ instead of
// comparing with them (go test ./pkg/parse -update).
var update = flag.Bool("update", false, "rewrite the golden files")
