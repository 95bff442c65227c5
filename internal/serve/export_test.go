package serve

// Routes lists every route the server answers, as net/http ServeMux
// patterns; openapi.yaml documents each but the dashboard's files (a test
// checks both ways).
func Routes() []string {
	var out []string
	for _, r := range (&server{}).routes() {
		out = append(out, r.pattern)
	}
	return out
}
