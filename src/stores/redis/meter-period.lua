-- Prepended to the spend scripts: Redis TIME is the one clock of a spend-cap period.
-- period_of mirrors periodOf in src/stores/meter.ts (UTC day or calendar month).

local DAY_MS = 86400000

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- civil date of a day number (days since 1970-01-01), proleptic Gregorian
local function civil_from_days(days)
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return y, m, d
end

-- day number of the first day of a month
local function days_from_civil(y, m)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = m > 2 and m - 3 or m + 9
  local doy = math.floor((153 * mp + 2) / 5)
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

-- id and end (epoch ms) of the period of kind 'day' or 'month' holding `ms`
local function period_of(ms, kind)
  local days = math.floor(ms / DAY_MS)
  local y, m, d = civil_from_days(days)
  if kind == 'day' then
    return string.format('%04d-%02d-%02d', y, m, d), (days + 1) * DAY_MS
  end
  if m == 12 then
    return string.format('%04d-%02d', y, m), days_from_civil(y + 1, 1) * DAY_MS
  end
  return string.format('%04d-%02d', y, m), days_from_civil(y, m + 1) * DAY_MS
end
