package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hopdag/hopdag/path"
)

// message is how the command line words err: the library's message, with
// the Go option names it suggests replaced by the flags that do the same.
func message(err error) string {
	msg := err.Error()
	var nr *path.NoRouteError
	if errors.As(err, &nr) && len(nr.Risks) > 0 {
		flag := "--accept " + strings.Join(nr.Risks, ",")
		if strings.Contains(msg, "(AcceptRisks)") {
			msg = strings.Replace(msg, "(AcceptRisks)", "("+flag+")", 1)
		} else {
			msg += fmt.Sprintf("; to accept, pass %s", flag)
		}
	}
	return msg
}
