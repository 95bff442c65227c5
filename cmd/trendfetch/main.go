// Command trendfetch ingests YouTube trending charts per region into SQLite
// under a shared, per-credential API quota. See README.md.
package main

import "os"

func main() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}
