# netplan YAML in, the same out with the value of every key named *password*, *psk* or *private*, or key (a
# WireGuard private key), shared (its preshared key) or pin (a SIM's), replaced.
function quoted(s) { return match(s, /^"([^"\\]|\\.)*"/) || match(s, /^'([^']|'')*'/) }
BEGIN {
  name = "[\"']?([A-Za-z0-9_-]*(password|psk|private)[A-Za-z0-9_-]*|key|shared|pin)[\"']?[ \t]*:"
  hidden = "\"(not collected)\""; deeper = -1
}
deeper >= 0 {  # after a block-style secret: drop what continues its value
  match($0, /^[ \t]*/)
  if ($0 ~ /^[ \t]*$/ || RLENGTH > deeper || (RLENGTH == deeper && substr($0, RLENGTH + 1) ~ /^-([ \t]|$)/)) next
  deeper = -1
}
{
  out = ""; rest = $0
  if (match(rest, "^[ \t-]*" name)) {  # block style: key first on its line
    out = substr(rest, 1, RLENGTH) " " hidden; rest = substr(rest, RLENGTH + 1); sub(/^[ \t]*/, "", rest)
    if (!quoted(rest)) { match(out, /^[ \t-]*/); deeper = RLENGTH; print out; next }
    rest = substr(rest, RLENGTH + 1)
  }
  while (match(rest, "[{,][ \t]*" name)) {  # flow style: {a: b, psk: c}
    out = out substr(rest, 1, RSTART + RLENGTH - 1) " " hidden; rest = substr(rest, RSTART + RLENGTH)
    sub(/^[ \t]*/, "", rest)
    if (!quoted(rest)) match(rest, /^[^,}]*/)
    rest = substr(rest, RLENGTH + 1)
  }
  print out rest
}
