//go:build unix

package config

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestSecretFileMustBeRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Credential{Name: "p", KeyFile: fifo}.APIKey(noEnv)
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("key file that is a FIFO: err = %v, want a refusal (reading it would hang)", err)
	}
	_, err = Credential{Name: "p", KeyFile: t.TempDir()}.APIKey(noEnv)
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("key file that is a directory: err = %v", err)
	}
}
