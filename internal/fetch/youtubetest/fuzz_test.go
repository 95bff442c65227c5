package youtubetest

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzLoadCSVCharts feeds arbitrary bytes to the Kaggle/scraper CSV loader: it
// must never panic, and every rejection must be a one-line-per-cause error
// that says what it could not read. The seed corpus is a few short
// synthetic rows of each of the three recorded layouts (2018 scraper, 2020
// rsrishav with ISO dates, 2017 Kaggle with unquoted "a"|"b" tags), never
// recorded data.
func FuzzLoadCSVCharts(f *testing.F) {
	h18 := strings.Join(header2018, ",") + "\n"
	h17 := strings.Join(header2017, ",") + "\n"
	for _, seed := range []string{
		h18 + `"abcdefghijk","A title","2018-10-31T17:00:00.000Z","UCxxxxxxxxxxxxxxxxxxxxxx","Chan","10","18.01.11","a|b","123","4","1","2","https://i.ytimg.com/vi/abcdefghijk/default.jpg","False","False","desc"` + "\n",
		h18 + `"v2","T","2018-10-31T17:00:00.000Z","UC1","C","24","18.01.11","[none]","1","","","","","True","True",""` + "\n" +
			`"v3","T3","2018-10-31T17:00:00.000Z","UC1","C","24","18.02.11","x","9","1","0","0","","False","False","multi` + "\n" + `line"` + "\n",
		h18 + `"v4","2020","2020-08-11T19:20:14Z","UC2","C","22","2020-08-12T00:00:00Z","[None]","1514614","156908","5855","35313","https://i.ytimg.com/vi/v4/default.jpg","False","False","d"` + "\n",
		h17 + `2kyS6SvSYSE,17.14.11,WE WANT TO TALK,CaseyNeistat,22,2017-11-13T17:13:01.000Z,SHANtell martin,748374,57527,2966,15954,https://i.ytimg.com/vi/2kyS6SvSYSE/default.jpg,False,False,False,line\nbreak` + "\n",
		h17 + `x1,17.14.11,"quoted, title",Chan,24,2017-11-13T07:30:00.000Z,"a"|"b c",1,2,3,4,,True,False,False,` + "\n",
		"\ufeff" + h18,
		h18 + `"v5","T","p","UC","C","1","d","t","not-a-number","1","1","1","","False","False",""` + "\n",
		"video_id,title\nx,y\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dates, charts, err := LoadCSVCharts(bytes.NewReader(data), "US")
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, "trending CSV") {
				t.Errorf("error does not say what failed: %q", msg)
			}
			if dates != nil || charts != nil {
				t.Errorf("dates or charts returned with an error")
			}
			return
		}
		if len(dates) == 0 {
			t.Fatal("no dates and no error")
		}
		for _, d := range dates {
			if len(charts[d]) == 0 {
				t.Fatalf("date %q without videos", d)
			}
			for _, v := range charts[d] {
				if v.Id == "" || v.Snippet == nil || v.Statistics == nil {
					t.Fatalf("incomplete video %+v", v)
				}
			}
		}
	})
}
