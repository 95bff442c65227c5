package quota

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// OutageReserve is this host's outage reserve (docs/quota.md, "The outage reserve"): per
// credential, the units its hold in the backend holds per bucket, those spent while the backend
// was unreachable, and until when they may be spent, kept in one file of the host's state
// directory (mode 0600, replaced atomically and fsynced, under an exclusive lock) so that the
// reserve of a cron process outlives it and processes of one host share it.
type OutageReserve struct {
	path     string
	want     map[string]int64
	spendFor time.Duration
}

// ReserveState is one credential's reserve as kept in the file: the hold's ID in the backend
// (the host name and a random suffix), the units Held and Spent per bucket, when the hold was
// Admitted and until when it may be spent (SpendUntil), by the local clock.
type ReserveState struct {
	ID         string           `json:"id"`
	Held       map[string]int64 `json:"held"`
	Spent      map[string]int64 `json:"spent"`
	Admitted   time.Time        `json:"admitted"`
	SpendUntil time.Time        `json:"spend_until"`
}

// ErrReserveSpent is why SpendReserve refuses a call: the reserve lacks its units or its time is over.
var ErrReserveSpent = errors.New("this host's outage reserve is spent")

// NewOutageReserve returns the reserve kept in the file path (created when first written), of
// want units per bucket, each hold spendable for spendFor (Limiter.Hold).
func NewOutageReserve(path string, want map[string]int64, spendFor time.Duration) *OutageReserve {
	return &OutageReserve{path: path, want: want, spendFor: spendFor}
}

// Refill gives back credential's reserve and takes a new one (Limiter.Hold): the units spent
// from it so far are recorded in the backend. On error the reserve is kept as it was.
func (l *Limiter) Refill(ctx context.Context, r *OutageReserve, credential string) (st ReserveState, err error) {
	err = r.update(func(all map[string]ReserveState) bool {
		st = all[credential]
		if st.ID == "" {
			host, _ := os.Hostname()
			suffix := make([]byte, 4)
			_, _ = rand.Read(suffix)
			st.ID = host + "#" + hex.EncodeToString(suffix)
		}
		start := time.Now()
		held, herr := l.Hold(ctx, credential, st.ID, st.Spent, r.want, r.spendFor)
		if err = herr; err != nil {
			return false
		}
		st = ReserveState{ID: st.ID, Held: held, Spent: map[string]int64{}, Admitted: start, SpendUntil: start.Add(r.spendFor)}
		all[credential] = st
		return true
	})
	return st, err
}

// SpendReserve takes one call of method from credential's reserve before it is sent (shadow
// buckets aside): an error wrapping ErrReserveSpent when a bucket it charges lacks the units or
// the reserve's time is over, naming which.
func (l *Limiter) SpendReserve(r *OutageReserve, credential, method string) error {
	if _, err := l.Charges(method); err != nil {
		return err
	}
	var why error
	err := r.update(func(all map[string]ReserveState) bool {
		st := all[credential]
		if !time.Now().Before(st.SpendUntil) {
			why = fmt.Errorf("%w: none held, or its time ended at %s", ErrReserveSpent, st.SpendUntil.UTC().Format(time.RFC3339))
			return false
		}
		for _, c := range l.charges[method] {
			if left := st.Held[c.Name] - st.Spent[c.Name]; !c.Shadow && left < c.Units {
				why = fmt.Errorf("%w: bucket %q has %d of %d units left, %s costs %d", ErrReserveSpent, c.Name, left, st.Held[c.Name], method, c.Units)
				return false
			}
		}
		for _, c := range l.charges[method] {
			if !c.Shadow {
				st.Spent[c.Name] += c.Units
			}
		}
		all[credential] = st
		return true
	})
	return errors.Join(err, why)
}

// update runs fn on every credential's reserve under the file's lock and writes them back
// when fn reports a change.
func (r *OutageReserve) update(fn func(all map[string]ReserveState) (changed bool)) error {
	if err := os.MkdirAll(filepath.Dir(r.path), 0o700); err != nil {
		return fmt.Errorf("outage reserve: %w", err)
	}
	lock, err := os.OpenFile(r.path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("outage reserve: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("outage reserve: lock %s: %w", lock.Name(), err)
	}
	all := map[string]ReserveState{}
	switch b, err := os.ReadFile(r.path); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("outage reserve: %w", err)
	case json.Unmarshal(b, &all) != nil:
		return fmt.Errorf("outage reserve: %s is not a reserve file: move it away", r.path)
	}
	if !fn(all) {
		return nil
	}
	return r.write(all)
}

// write replaces the file with all: a temporary file, fsynced, renamed over it, the directory fsynced.
func (r *OutageReserve) write(all map[string]ReserveState) error {
	b, _ := json.Marshal(all) // maps of strings and numbers: cannot fail
	f, err := os.CreateTemp(filepath.Dir(r.path), ".quota-reserve-*")
	if err == nil {
		defer os.Remove(f.Name())
		_, err = f.Write(b)
		err = errors.Join(err, f.Sync(), f.Close())
	}
	if err == nil {
		err = os.Rename(f.Name(), r.path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(r.path))
	}
	if err != nil {
		return fmt.Errorf("outage reserve: cannot write %s: %w", r.path, err)
	}
	return nil
}

// syncDir fsyncs directory dir, so a rename in it survives a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
