package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/store"
)

// copyOptions is what `copy` was asked (its flags) and where it writes.
type copyOptions struct {
	io     ioStreams
	engine *engine.Engine
	from   string // the SQLite file
	asJSON bool
}

func newCopyCmd(a *app) *cobra.Command {
	o := &copyOptions{}
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
			o.io, o.engine = a.ioStreams, a.engine()
			return copyRun(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.from, "from", "", "the SQLite database file to copy")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the rows written per table as JSON")
	return cmd
}

// copyRun copies o.from into the database and prints the rows written per table.
func copyRun(ctx context.Context, o *copyOptions) error {
	if o.from == "" {
		return usagef("trendfetch copy --from ~/.local/share/trendfetch/trendfetch.db", "--from: give the SQLite database to copy")
	}
	start := time.Now()
	copied, err := o.engine.CopyFrom(ctx, o.from)
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	if o.asJSON {
		return o.io.printJSON(struct {
			Tables  []store.Copied `json:"tables"`
			Seconds float64        `json:"seconds"`
		}{copied, secs})
	}
	for _, c := range copied {
		fmt.Fprintf(o.io.stdout, "%-16s %10d rows copied\n", c.Table, c.Rows)
	}
	fmt.Fprintf(o.io.stdout, "in %.1fs\n", secs)
	return nil
}
