package schedule

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

func TestCrontabFieldsFireWhenTheSchedulerDoes(t *testing.T) {
	for _, tc := range []struct {
		every, offset time.Duration
		want          string
	}{
		{2 * time.Hour, 0, "0 */2 * * *"},
		{2 * time.Hour, 3 * time.Minute, "3 */2 * * *"},
		{2 * time.Hour, 63 * time.Minute, "3 1-23/2 * * *"},
		{time.Hour, 10 * time.Minute, "10 * * * *"},
		{15 * time.Minute, 5 * time.Minute, "5-59/15 * * * *"},
		{15 * time.Minute, 0, "*/15 * * * *"},
		{time.Minute, 0, "* * * * *"},
		{24 * time.Hour, 6*time.Hour + 30*time.Minute, "30 6 * * *"},
		{6 * time.Hour, 5*time.Hour + 59*time.Minute, "59 5-23/6 * * *"},
	} {
		got, err := CrontabFields(tc.every, tc.offset)
		if err != nil || got != tc.want {
			t.Errorf("CrontabFields(%s, %s) = %q, %v; want %q", tc.every, tc.offset, got, err, tc.want)
			continue
		}
		std, err := cron.ParseStandard("CRON_TZ=Europe/Paris " + got)
		if err != nil {
			t.Fatalf("%q: %v", got, err)
		}
		paris, _ := time.LoadLocation("Europe/Paris")
		ours := Every{Interval: tc.every, Offset: tc.offset, Location: paris}
		at := time.Date(2026, 3, 28, 20, 0, 0, 0, time.UTC) // across Paris's DST change
		for range 100 {
			a, b := ours.Next(at), std.Next(at)
			if !a.Equal(b) {
				t.Fatalf("%s+%s: scheduler fires at %s, crontab line %q at %s", tc.every, tc.offset, a, got, b)
			}
			at = a
		}
	}
	for _, bad := range [][2]time.Duration{
		{90 * time.Second, 0}, {7 * time.Minute, 0}, {5 * time.Hour, 0}, {48 * time.Hour, 0},
		{time.Hour, 30 * time.Second}, {time.Hour, time.Hour}, {time.Hour, -time.Minute},
	} {
		if got, err := CrontabFields(bad[0], bad[1]); err == nil {
			t.Errorf("CrontabFields(%s, %s) = %q, want an error", bad[0], bad[1], got)
		}
	}
}
