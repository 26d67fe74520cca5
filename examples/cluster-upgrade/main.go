// Command cluster-upgrade is hopdag's demo. For now it loads the embedded
// sample catalog (testdata/catalog) and prints its releases and what each
// ships; the full plan-and-run demo builds on the path, dag and runner
// packages.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/hopdag/hopdag/release"
)

func main() {
	dir := flag.String("catalog", "testdata/catalog", "catalog directory")
	flag.Parse()
	c, err := release.LoadDir(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, v := range c.Versions() {
		r, _ := c.Release(v)
		fmt.Printf("%-12s %d components\n", v, len(r.Components))
		for _, cv := range c.ComponentsOf(r) {
			fmt.Printf("  %-22s %-12s %s\n", cv.Name, cv.Version, cv.Type)
		}
	}
}
