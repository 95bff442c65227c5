package schedule

import (
	"fmt"
	"strconv"
	"time"
)

// CrontabFields returns the crontab time fields of the ticks of
// Every{every, offset}: CrontabFields(2h, 3m) = "3 */2 * * *",
// (15m, 5m) = "5-59/15 * * * *". every must divide an hour in minutes or a
// day in hours; offset is whole minutes in [0, every). Errors say which.
func CrontabFields(every, offset time.Duration) (string, error) {
	if err := calendarTicks(every, offset, "a crontab line"); err != nil {
		return "", err
	}
	min := int(offset % time.Hour / time.Minute)
	if every < time.Hour {
		return cronStep(min, int(every/time.Minute), 59) + " * * * *", nil
	}
	return fmt.Sprintf("%d %s * * *", min, cronStep(int(offset/time.Hour), int(every/time.Hour), 23)), nil
}

// cronStep is a crontab field firing every n from start up to last.
func cronStep(start, n, last int) string {
	switch {
	case n == 1:
		return "*"
	case n > last:
		return strconv.Itoa(start)
	case start == 0:
		return "*/" + strconv.Itoa(n)
	}
	return fmt.Sprintf("%d-%d/%d", start, last, n)
}

// calendarTicks returns an error naming form unless CrontabFields and
// OnCalendar can express every and offset.
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
// ticks of CrontabFields(every, offset): (2h, 3m) = "*-*-* 00/2:03:00",
// (15m, 5m) = "*-*-* *:05/15:00". Errors are CrontabFields's.
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
