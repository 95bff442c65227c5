// Package sdnotify speaks systemd's notify protocol (sd_notify(3)): a
// service of Type=notify tells systemd it is ready (READY=1), that it is
// alive (WATCHDOG=1, when WatchdogSec= asks) and that it is stopping
// (STOPPING=1), each a datagram to the unix socket in $NOTIFY_SOCKET. Outside
// systemd (no NOTIFY_SOCKET) every call does nothing. Start with Ready.
package sdnotify

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Send sends state (e.g. "READY=1") to $NOTIFY_SOCKET; it does nothing
// without one. An abstract socket is written with a leading "@".
func Send(state string) error {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil
	}
	if strings.HasPrefix(path, "@") {
		path = "\x00" + path[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.Write([]byte(state))
	return err
}

// readyOnce makes Ready notify once per process: systemd watches the
// process, not its parts.
var readyOnce sync.Once

// WatchdogInterval is how often systemd expects WATCHDOG=1: half of
// $WATCHDOG_USEC (sd_watchdog_enabled(3)), or 0 when no watchdog is asked
// for this process ($WATCHDOG_PID names another one).
func WatchdogInterval() time.Duration {
	usec, err := strconv.ParseInt(os.Getenv("WATCHDOG_USEC"), 10, 64)
	if err != nil || usec <= 0 {
		return 0
	}
	if pid := os.Getenv("WATCHDOG_PID"); pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return 0
	}
	return time.Duration(usec) * time.Microsecond / 2
}

// Ready tells systemd the service is ready and, when a watchdog is asked
// for, pings it every WatchdogInterval. When ctx is done (a stop began) or
// the returned stop is called, it sends STOPPING=1 once and stops pinging.
// Failures to notify are logged at debug level (systemd then times the
// start out and says so). The service is one process: only the first call
// notifies (schedule --serve starts the scheduler and the read API), later
// ones return a stop that does nothing.
func Ready(ctx context.Context, log zerolog.Logger) (stop func()) {
	first := false
	readyOnce.Do(func() { first = true })
	if !first || os.Getenv("NOTIFY_SOCKET") == "" {
		return func() {}
	}
	send := func(state string) {
		if err := Send(state); err != nil {
			log.Debug().Err(err).Str("state", state).Msg("sd_notify failed")
		}
	}
	send("READY=1")
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer send("STOPPING=1")
		var tick <-chan time.Time
		if every := WatchdogInterval(); every > 0 {
			t := time.NewTicker(every)
			defer t.Stop()
			tick = t.C
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick:
				send("WATCHDOG=1")
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
