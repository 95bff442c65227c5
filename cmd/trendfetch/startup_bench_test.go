package main

import (
	"os"
	"os/exec"
	"testing"
)

// BenchmarkProcessStartup measures whole-process wall time of the commands
// an operator or a monitoring probe runs often: no network, no migration
// work, no heavy init on their paths (target < 30 ms each).
func BenchmarkProcessStartup(b *testing.B) {
	dir := b.TempDir()
	env := append(os.Environ(), "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	for _, args := range [][]string{{"version"}, {"quota", "status"}} {
		b.Run(args[len(args)-1], func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command(binary, args...)
				cmd.Env = env
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %v\n%s", args, err, out)
				}
			}
		})
	}
}
