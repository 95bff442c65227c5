package schedule

import (
	"fmt"
	"time"
)

// CrontabFields returns the five crontab time fields ("m h dom mon dow")
// that fire at the ticks of Every{Interval: every, Offset: offset} in the cron
// daemon's time zone: every must be whole minutes dividing an hour (1m,
// 5m, 15m, 30m), whole hours dividing a day (1h, 2h, 3h, 4h, 6h, 8h, 12h)
// or 24h; offset must be whole minutes in [0, every). For example
// CrontabFields(2h, 3m) = "3 */2 * * *" and CrontabFields(15m, 5m) =
// "5-59/15 * * * *". Errors say which constraint failed.
func CrontabFields(every, offset time.Duration) (string, error) {
	if err := calendarTicks(every, offset, "a crontab line"); err != nil {
		return "", err
	}
	min := int(offset % time.Hour / time.Minute)
	switch {
	case every < time.Hour && time.Hour%every == 0:
		n := int(every / time.Minute)
		switch {
		case n == 1:
			return "* * * * *", nil
		case min == 0:
			return fmt.Sprintf("*/%d * * * *", n), nil
		default:
			return fmt.Sprintf("%d-59/%d * * * *", min, n), nil
		}
	default: // hours dividing a day (calendarTicks)
		n, start := int(every/time.Hour), int(offset/time.Hour)
		switch {
		case n == 1:
			return fmt.Sprintf("%d * * * *", min), nil
		case n == 24:
			return fmt.Sprintf("%d %d * * *", min, start), nil
		case start == 0:
			return fmt.Sprintf("%d */%d * * *", min, n), nil
		default:
			return fmt.Sprintf("%d %d-23/%d * * *", min, start, n), nil
		}
	}
}

// calendarTicks returns an error naming form (the calendar schedule
// written) unless CrontabFields and OnCalendar can express every and offset.
func calendarTicks(every, offset time.Duration, form string) error {
	switch {
	case every <= 0 || every%time.Minute != 0:
		return fmt.Errorf("interval %s is not whole minutes: %s cannot express it", every, form)
	case offset < 0 || offset%time.Minute != 0:
		return fmt.Errorf("offset %s is not whole minutes: %s cannot express it", offset, form)
	case offset >= every:
		return fmt.Errorf("offset %s is not below the interval %s", offset, every)
	case !(every < time.Hour && time.Hour%every == 0) && !(every%time.Hour == 0 && (24*time.Hour)%every == 0):
		return fmt.Errorf("interval %s cannot be written as %s: use minutes dividing an hour (1m-30m), hours dividing a day (1h-12h) or 24h", every, form)
	}
	return nil
}

// OnCalendar returns the systemd calendar event (systemd.time(7)) of the
// same ticks as CrontabFields(every, offset), in the same forms: for
// example OnCalendar(2h, 3m) = "*-*-* 00/2:03:00" and OnCalendar(15m, 5m) =
// "*-*-* *:05/15:00". Errors are CrontabFields's, naming OnCalendar=.
func OnCalendar(every, offset time.Duration) (string, error) {
	if err := calendarTicks(every, offset, "a systemd OnCalendar= event"); err != nil {
		return "", err
	}
	min := int(offset % time.Hour / time.Minute)
	if every < time.Hour {
		return fmt.Sprintf("*-*-* *:%02d/%d:00", min, int(every/time.Minute)), nil
	}
	n, start := int(every/time.Hour), int(offset/time.Hour)
	switch n {
	case 1:
		return fmt.Sprintf("*-*-* *:%02d:00", min), nil
	case 24:
		return fmt.Sprintf("*-*-* %02d:%02d:00", start, min), nil
	}
	return fmt.Sprintf("*-*-* %02d/%d:%02d:00", start, n, min), nil
}
