package quota

// The Pacific quota day must be computed identically on hosts without a
// zoneinfo database (minimal containers), so the tz database is linked in.
import _ "time/tzdata"
