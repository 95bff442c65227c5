// Package sdnotify tells systemd a Type=notify service's state (sd_notify(3),
// through go-systemd's daemon package); outside systemd it does nothing.
package sdnotify

import (
	"context"
	"os"
	"sync/atomic"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/rs/zerolog"
)

// readyOnce makes Ready notify once per process (schedule --serve starts
// the scheduler and the read API): later calls return a stop that does nothing.
var readyOnce atomic.Bool

// Ready tells systemd the service is ready and pings the watchdog every half of WatchdogSec= when
// asked (sd_watchdog_enabled(3)). When ctx is done or stop is called it sends STOPPING=1 once and
// stops pinging. Failures to notify are logged at debug level (systemd then times the start out).
func Ready(ctx context.Context, log zerolog.Logger) (stop func()) {
	if !readyOnce.CompareAndSwap(false, true) || os.Getenv("NOTIFY_SOCKET") == "" {
		return func() {}
	}
	send := func(state string) {
		if _, err := daemon.SdNotify(false, state); err != nil {
			log.Debug().Err(err).Str("state", state).Msg("sd_notify failed")
		}
	}
	send(daemon.SdNotifyReady)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer send(daemon.SdNotifyStopping)
		var tick <-chan time.Time
		if every, _ := daemon.SdWatchdogEnabled(false); every > 0 {
			t := time.NewTicker(every / 2)
			defer t.Stop()
			tick = t.C
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick:
				send(daemon.SdNotifyWatchdog)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
