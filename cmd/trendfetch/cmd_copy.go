package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/store"
)

func newCopyCmd(a *app) *cobra.Command {
	var from string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "copy --from PATH.db",
		Short: "Copy a SQLite dataset into the PostgreSQL database; run again, it copies only what is new",
		Long: `Copy the SQLite database --from (captures, entries, statistics samples, text
versions, runs, channels, categories) into the database setting, which must be
PostgreSQL (--database postgres://…, TRENDFETCH_DATABASE or store.url_file).
Rows are matched by natural keys: run again, it copies only what is new, and
resumes an interrupted copy. Copied into an empty database, both export the
same bytes. Prints the rows written per table. Costs no quota.`,
		Example: "  trendfetch --database postgres://tf@db.example/trendfetch copy --from ~/.local/share/trendfetch/trendfetch.db",
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" {
				return usagef("trendfetch copy --from ~/.local/share/trendfetch/trendfetch.db", "--from: give the SQLite database to copy")
			}
			start := time.Now()
			copied, err := a.engine().CopyFrom(cmd.Context(), from)
			if err != nil {
				return err
			}
			secs := time.Since(start).Seconds()
			if asJSON {
				return a.printJSON(struct {
					Tables  []store.Copied `json:"tables"`
					Seconds float64        `json:"seconds"`
				}{copied, secs})
			}
			for _, c := range copied {
				fmt.Fprintf(a.stdout, "%-16s %10d rows copied\n", c.Table, c.Rows)
			}
			fmt.Fprintf(a.stdout, "in %.1fs\n", secs)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the SQLite database file to copy")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the rows written per table as JSON")
	return cmd
}
