//go:build !linux

package redistest

import "os/exec"

// setPdeathsig is a no-op outside Linux; tb.Cleanup still kills the server.
func setPdeathsig(cmd *exec.Cmd) {}
