package redistest

import (
	"crypto/x509"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// StartTLS starts a server like Start that also accepts TLS on TLSPort,
// with net/http/httptest's self-signed test certificate (for 127.0.0.1,
// ::1 and example.com; no client certificate required): a certificate no
// system trusts. The plain port (Addr) stays open for setup and PING.
func StartTLS(tb testing.TB, args ...string) *Server {
	tb.Helper()
	ts := httptest.NewUnstartedServer(nil) // started only to hand out its certificate
	ts.StartTLS()
	ts.Close()
	cert := ts.TLS.Certificates[0]
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for file, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: cert.Certificate[0]}, keyFile: {Type: "PRIVATE KEY", Bytes: key}} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	tlsPort, err := freePort(false)
	if err != nil {
		tb.Fatal(err)
	}
	s := Start(tb, append([]string{
		"--tls-port", strconv.Itoa(tlsPort),
		"--tls-cert-file", certFile,
		"--tls-key-file", keyFile,
		"--tls-ca-cert-file", certFile,
		"--tls-auth-clients", "no",
	}, args...)...)
	s.TLSPort = tlsPort
	return s
}
