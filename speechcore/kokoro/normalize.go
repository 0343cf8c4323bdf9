package kokoro

import (
	"regexp"
	"strconv"
	"strings"
)

// Normalize rewrites text the way it should be read aloud: curly quotes and guillemets become
// straight quotes, whitespace collapses, common abbreviations (Dr., Mr., Mrs., Ms., Prof., St.,
// Jr., Sr., vs., etc., e.g., i.e.) are spelled out, and numbers become words — money ($, £, €),
// times (3:30 pm), ordinals (21st), percentages, ranges (5-10), years (1984, 2024), decimals and
// thousands separators. It is applied to one sentence at a time, after splitting, so a trailing
// "etc." keeps the period that ends its sentence.
func Normalize(text string) string {
	text = quoteReplacer.Replace(text)
	text = strings.Join(strings.Fields(text), " ")
	// The regexps are the cost: each runs only where its trigger is present.
	if strings.IndexByte(text, '.') >= 0 {
		text = abbrevRe.ReplaceAllStringFunc(text, expandAbbrev)
		text = latinRe.ReplaceAllStringFunc(text, expandLatin)
	}
	if strings.ContainsAny(text, "0123456789") {
		if strings.ContainsAny(text, "$£€") {
			text = moneyRe.ReplaceAllStringFunc(text, expandMoney)
		}
		if strings.IndexByte(text, ':') >= 0 {
			text = timeRe.ReplaceAllStringFunc(text, expandTime)
		}
		text = ordinalRe.ReplaceAllStringFunc(text, expandOrdinal)
		if strings.IndexByte(text, '%') >= 0 {
			text = percentRe.ReplaceAllStringFunc(text, expandPercent)
		}
		if strings.IndexByte(text, '-') >= 0 {
			text = rangeRe.ReplaceAllStringFunc(text, expandRange)
			text = minusRe.ReplaceAllString(text, "${1}minus $2")
		}
		text = numberRe.ReplaceAllStringFunc(text, expandNumber)
	}
	if strings.IndexByte(text, '&') >= 0 {
		text = strings.ReplaceAll(text, "&", " and ")
		text = strings.Join(strings.Fields(text), " ")
	}
	return text
}

var quoteReplacer = strings.NewReplacer(
	"\u201c", `"`, "\u201d", `"`, "\u201e", `"`, "\u00ab", `"`, "\u00bb", `"`,
	"\u2018", "'", "\u2019", "'", "\u201a", "'", "\u2032", "'",
	" -- ", " \u2014 ", "--", "\u2014", " - ", " \u2014 ",
)

var (
	abbrevRe = regexp.MustCompile(`\b(Dr|Mr|Mrs|Ms|Prof|Jr|Sr|St|vs|Mt|No)\.(\s*\d)?`)
	latinRe  = regexp.MustCompile(`\b(etc|e\.g|i\.e)\.(\s+\p{Ll})?`)
)

var titles = map[string]string{
	"Dr": "Doctor", "Mr": "Mister", "Mrs": "Missus", "Ms": "Miz", "Prof": "Professor",
	"Jr": "Junior", "Sr": "Senior", "St": "Saint", "vs": "versus", "Mt": "Mount",
}

func expandAbbrev(m string) string {
	dot := strings.IndexByte(m, '.')
	word, rest := m[:dot], m[dot+1:]
	if word == "No" {
		if rest == "" { // "No." without a number is the word no at a sentence's end.
			return m
		}
		return "number" + rest
	}
	return titles[word] + rest
}

func expandLatin(m string) string {
	sub := latinRe.FindStringSubmatch(m)
	switch sub[1] {
	case "etc":
		// The period ends the sentence too unless the sentence goes on in lower case.
		if sub[2] != "" {
			return "et cetera" + sub[2]
		}
		return "et cetera."
	case "e.g":
		return "for example," + sub[2]
	default:
		return "that is," + sub[2]
	}
}

var (
	moneyRe   = regexp.MustCompile(`([$£€])(\d+(?:,\d{3})*)(\.\d+)?(?:\s+(thousand|million|billion|trillion)\b)?`)
	timeRe    = regexp.MustCompile(`\b(\d{1,2}):(\d{2})\b(?:\s*([AaPp])\.?[Mm]\b\.?)?`)
	ordinalRe = regexp.MustCompile(`\b(\d+(?:,\d{3})*)(st|nd|rd|th)\b`)
	percentRe = regexp.MustCompile(`(\d+(?:,\d{3})*(?:\.\d+)?)\s?%`)
	rangeRe   = regexp.MustCompile(`\b(\d+)-(\d+)\b`)
	minusRe   = regexp.MustCompile(`(^|\s)-(\d)`)
	numberRe  = regexp.MustCompile(`\b(\d+(?:,\d{3})*)(\.\d+)?`)
)

var currencies = map[string][2]string{
	"$": {"dollar", "cent"}, "£": {"pound", "penny"}, "€": {"euro", "cent"},
}

func expandMoney(m string) string {
	sub := moneyRe.FindStringSubmatch(m)
	unit := currencies[sub[1]]
	whole := strings.ReplaceAll(sub[2], ",", "")
	if sub[4] != "" { // "$1.5 million" is read "one point five million dollars".
		return numberWords(whole, sub[3]) + " " + sub[4] + " " + unit[0] + "s"
	}
	n, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return m
	}
	var parts []string
	if n > 0 || sub[3] == "" {
		parts = append(parts, cardinal(n)+" "+plural(unit[0], n))
	}
	if sub[3] != "" {
		frac := (sub[3] + "00")[1:3]
		c, _ := strconv.ParseInt(frac, 10, 64)
		if c > 0 {
			name := unit[1]
			if name == "penny" && c != 1 {
				name = "pence"
			} else {
				name = plural(name, c)
			}
			parts = append(parts, cardinal(c)+" "+name)
		} else if n == 0 {
			parts = append(parts, "zero "+plural(unit[0], 0))
		}
	}
	return strings.Join(parts, " and ")
}

func plural(word string, n int64) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func expandTime(m string) string {
	sub := timeRe.FindStringSubmatch(m)
	h, _ := strconv.Atoi(sub[1])
	mins, _ := strconv.Atoi(sub[2])
	if h > 24 || mins > 59 {
		return m
	}
	var b strings.Builder
	b.WriteString(cardinal(int64(h)))
	switch {
	case mins == 0 && sub[3] == "":
		b.WriteString(" o'clock")
	case mins == 0:
	case mins < 10:
		b.WriteString(" oh " + cardinal(int64(mins)))
	default:
		b.WriteString(" " + cardinal(int64(mins)))
	}
	if sub[3] != "" {
		b.WriteString(" " + strings.ToUpper(sub[3]) + " M")
	}
	return b.String()
}

func expandOrdinal(m string) string {
	sub := ordinalRe.FindStringSubmatch(m)
	n, err := strconv.ParseInt(strings.ReplaceAll(sub[1], ",", ""), 10, 64)
	if err != nil {
		return m
	}
	return ordinal(n)
}

func expandPercent(m string) string {
	sub := percentRe.FindStringSubmatch(m)
	num := strings.ReplaceAll(sub[1], ",", "")
	whole, frac, _ := strings.Cut(num, ".")
	if frac != "" {
		frac = "." + frac
	}
	return numberWords(whole, frac) + " percent"
}

func expandRange(m string) string {
	a, b, _ := strings.Cut(m, "-")
	return a + " to " + b
}

func expandNumber(m string) string {
	sub := numberRe.FindStringSubmatch(m)
	whole, frac := strings.ReplaceAll(sub[1], ",", ""), sub[2]
	if frac == "" && whole == sub[1] && len(whole) == 4 {
		if y := year(whole); y != "" {
			return y
		}
	}
	return numberWords(whole, frac)
}

// numberWords reads a whole part and an optional ".ddd" fraction: "3", ".14" → "three point one four".
func numberWords(whole, frac string) string {
	var words string
	if n, err := strconv.ParseInt(whole, 10, 64); err == nil && n < 1e15 {
		words = cardinal(n)
	} else {
		words = digits(whole)
	}
	if len(frac) > 1 {
		words += " point " + digits(frac[1:])
	}
	return words
}

func digits(s string) string {
	out := make([]string, 0, len(s))
	for _, c := range s {
		if c >= '0' && c <= '9' {
			out = append(out, ones[c-'0'])
		}
	}
	return strings.Join(out, " ")
}

// year reads a four-digit number the way years are said, or returns "" when it is not one.
func year(s string) string {
	n, _ := strconv.Atoi(s)
	hi, lo := n/100, n%100
	switch {
	case n < 1100 || n > 2099:
		return ""
	case n >= 2000 && n < 2010:
		return cardinal(int64(n))
	case lo == 0:
		return cardinal(int64(hi)) + " hundred"
	case lo < 10:
		return cardinal(int64(hi)) + " oh " + cardinal(int64(lo))
	default:
		return cardinal(int64(hi)) + " " + cardinal(int64(lo))
	}
}

var (
	ones = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
		"ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"}
	tens   = []string{"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"}
	scales = []struct {
		value int64
		name  string
	}{{1e12, "trillion"}, {1e9, "billion"}, {1e6, "million"}, {1e3, "thousand"}}
)

// cardinal spells n in words: 1234 → "one thousand two hundred thirty-four".
func cardinal(n int64) string {
	if n < 0 {
		return "minus " + cardinal(-n)
	}
	if n < 20 {
		return ones[n]
	}
	if n < 100 {
		if n%10 == 0 {
			return tens[n/10]
		}
		return tens[n/10] + "-" + ones[n%10]
	}
	if n < 1000 {
		s := ones[n/100] + " hundred"
		if n%100 != 0 {
			s += " " + cardinal(n%100)
		}
		return s
	}
	for _, sc := range scales {
		if n >= sc.value {
			s := cardinal(n/sc.value) + " " + sc.name
			if n%sc.value != 0 {
				s += " " + cardinal(n%sc.value)
			}
			return s
		}
	}
	return strconv.FormatInt(n, 10)
}

var ordinalWords = map[string]string{
	"one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
	"nine": "ninth", "twelve": "twelfth",
}

// ordinal spells n as an ordinal: 21 → "twenty-first".
func ordinal(n int64) string {
	c := cardinal(n)
	cut := strings.LastIndexAny(c, " -")
	head, last := c[:cut+1], c[cut+1:]
	if w, ok := ordinalWords[last]; ok {
		return head + w
	}
	if strings.HasSuffix(last, "y") {
		return head + strings.TrimSuffix(last, "y") + "ieth"
	}
	return head + last + "th"
}
