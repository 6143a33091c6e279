-- openresty.lua: the OpenResty pieces Kong's validation code reaches for, given to plain LuaJIT so that
-- Kong's own schema code (kong/db/schema/*, kong/db/schema/others/declarative_config.lua) runs unchanged.
-- Each stand-in does the real work where the validation depends on it (regexes on PCRE2, certificates and
-- keys with the openssl command, IP addresses with inet_pton) and is a no-op only where nothing validated
-- depends on it (logging, timers, the LMDB import side). `stand_ins()` lists the no-op ones for the report.
local ffi = require("ffi")
local cjson = require("cjson")
local rex = require("rex_pcre2")

local M = {}
local noop_modules = {}

-- ngx.re on PCRE2 -----------------------------------------------------------------------------------------
-- OpenResty's options are letters: i m s x u a D, and j/o/J (JIT, cache, JavaScript) that change nothing
-- a validator sees.
local FLAGS = rex.flags()
local OPTION_FLAGS = { i = FLAGS.CASELESS, m = FLAGS.MULTILINE, s = FLAGS.DOTALL, x = FLAGS.EXTENDED,
  u = FLAGS.UTF, a = FLAGS.ANCHORED, D = FLAGS.DUPNAMES }
local cache = {}

local function compile(pattern, options)
  options = options or ""
  local key = options .. "\0" .. pattern
  local hit = cache[key]
  if hit then return hit end
  local cf = 0
  for letter in options:gmatch(".") do
    if OPTION_FLAGS[letter] then cf = bit.bor(cf, OPTION_FLAGS[letter]) end
  end
  local ok, re = pcall(rex.new, pattern, cf)
  if not ok then
    -- OpenResty words a compile failure this way (ngx_http_lua_regex.c).
    return nil, "pcre2_compile() failed: " .. (tostring(re):gsub(" %(pattern offset: %d+%)$", "")) .. " in \"" .. pattern .. "\""
  end
  cache[key] = re
  return re
end

-- The captures of one match as ngx.re.match gives them: [0] the whole, then numbered, then named.
local function captures(subject, s, e, offsets)
  local m = { [0] = subject:sub(s, e) }
  local i = 1
  while offsets[2 * i - 1] ~= nil do
    local cs, ce = offsets[2 * i - 1], offsets[2 * i]
    m[i] = cs and subject:sub(cs, ce) or false
    i = i + 1
  end
  for k, v in pairs(offsets) do
    if type(k) == "string" then m[k] = v end
  end
  return m
end

local function exec(subject, pattern, options, ctx)
  local re, err = compile(pattern, options)
  if not re then return nil, err end
  local init = ctx and ctx.pos or 1
  local s, e, offsets = re:exec(subject, init)
  if not s then return false end
  if ctx then ctx.pos = e + 1 end
  return s, e, offsets
end

local re = {}
function re.find(subject, pattern, options, ctx, nth)
  local s, e, offsets = exec(subject, pattern, options, ctx)
  if s == nil then return nil, nil, e end
  if not s then return nil end
  if nth and nth > 0 then return offsets[2 * nth - 1] or nil, offsets[2 * nth] or nil end
  return s, e
end
function re.match(subject, pattern, options, ctx)
  local s, e, offsets = exec(subject, pattern, options, ctx)
  if s == nil then return nil, e end
  if not s then return nil end
  return captures(subject, s, e, offsets)
end
function re.gmatch(subject, pattern, options)
  local ctx = { pos = 1 }
  return function()
    if ctx.pos > #subject + 1 then return nil end
    local m, err = re.match(subject, pattern, options, ctx)
    if m and #m[0] == 0 then ctx.pos = ctx.pos + 1 end
    return m, err
  end
end
local function substitute(subject, pattern, replace, options, global)
  local rx, err = compile(pattern, options)
  if not rx then return nil, nil, err end
  local out, pos, n = {}, 1, 0
  while pos <= #subject + 1 do
    local s, e, offsets = rx:exec(subject, pos)
    if not s then break end
    local m = captures(subject, s, e, offsets)
    local with
    if type(replace) == "function" then
      with = replace(m)
    else
      with = replace:gsub("%${?(%w+)}?", function(name) return m[tonumber(name) or name] or "" end)
    end
    out[#out + 1] = subject:sub(pos, s - 1) .. with
    n = n + 1
    pos = e + 1
    if e < s then
      out[#out + 1] = subject:sub(s, s)
      pos = s + 1
    end
    if not global then break end
  end
  out[#out + 1] = subject:sub(pos)
  return table.concat(out), n
end
function re.sub(subject, pattern, replace, options) return substitute(subject, pattern, replace, options, false) end
function re.gsub(subject, pattern, replace, options) return substitute(subject, pattern, replace, options, true) end
function re.split(subject, pattern)
  local parts, pos = {}, 1
  for s, e in function() return re.find(subject, pattern, "jo", { pos = pos }) end do
    parts[#parts + 1] = subject:sub(pos, s - 1)
    pos = e + 1
  end
  parts[#parts + 1] = subject:sub(pos)
  return parts
end
M.re = re

-- The openssl command for resty.openssl ----------------------------------------------------------------
-- Kong parses certificates and keys with resty.openssl (typedefs.certificate/key, the certificates'
-- "does not match key" check, the CA certificates' expiry, CA constraint and digest). The same OpenSSL
-- does it here through its command line, on temporary files.
local function run(cmd, input)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(input)
  f:close()
  local p = io.popen(cmd:gsub("%%IN", path) .. " 2>/dev/null")
  local out = p:read("*a")
  local ok = p:close()
  os.remove(path)
  if ok == true or ok == 0 then return out end
  return nil
end

local pkey = {}
local pkey_mt = { __index = {} }
local function new_pkey(pub_pem)
  return setmetatable({ pub = pub_pem }, pkey_mt)
end
function pkey_mt.__index.to_PEM(self) return self.pub end
function pkey_mt.__index.get_key_type(self)
  local asn = run("openssl asn1parse -in %IN", self.pub) or ""
  local oid = asn:match("OBJECT%s*:([%w%-]+)") or "unknown"
  return { id = oid, sn = oid, ln = oid }
end
function pkey.new(text, opts)
  if type(text) ~= "string" then return nil, "expect a string" end
  if opts and opts.format == "JWK" then
    -- A JWK (jwt's and the keys entity's): decoded as JSON, not checked by OpenSSL here.
    local ok, jwk = pcall(cjson.decode, text)
    if ok and type(jwk) == "table" and jwk.kty then return new_pkey(text) end
    return nil, "invalid JWK"
  end
  local pub = text:find("PUBLIC KEY", 1, true) and run("openssl pkey -pubin -in %IN -pubout", text)
    or run("openssl pkey -in %IN -pubout", text)
  if not pub or pub == "" then
    return nil, "pkey.new:load_key: failed to load key"
  end
  return new_pkey(pub)
end

local x509 = {}
local x509_mt = { __index = {} }
function x509.new(text)
  if type(text) ~= "string" then return nil, "x509.new: expect a string" end
  local pub = run("openssl x509 -in %IN -noout -pubkey", text)
  if not pub or pub == "" then
    return nil, "x509.new: failed to parse certificate"
  end
  return setmetatable({ pem = text, pub = pub }, x509_mt)
end
function x509_mt.__index.get_pubkey(self) return new_pkey(self.pub) end
function x509_mt.__index.digest(self, alg)
  local hex = run("openssl x509 -in %IN -outform DER | openssl dgst -" .. (alg or "sha1") .. " -r", self.pem)
  hex = hex and hex:match("^(%x+)")
  if not hex then return nil end
  return (hex:gsub("%x%x", function(b) return string.char(tonumber(b, 16)) end))
end
function x509_mt.__index.get_not_after(self)
  local out = run("openssl x509 -in %IN -noout -enddate", self.pem) or ""
  local date = out:match("notAfter=(.-)%s*$")
  local p = io.popen("date -u -d '" .. (date or "") .. "' +%s")
  local epoch = tonumber(p:read("*a"))
  p:close()
  return epoch
end
function x509_mt.__index.get_basic_constraints(self, name)
  local out = run("openssl x509 -in %IN -noout -ext basicConstraints", self.pem) or ""
  if name == "CA" then return out:find("CA:TRUE", 1, true) ~= nil end
  return out
end

-- IP addresses for resty.ipmatcher (kong.tools.ip) -----------------------------------------------------
ffi.cdef [[ int inet_pton(int af, const char *src, void *dst); ]]
-- The types lua-resty-core declares, which kong.tools.time (3.9) and kong.tools.utils (3.0, 3.4) build on
-- at load (their nginx functions are never called here).
ffi.cdef [[
  typedef struct { size_t len; const unsigned char *data; } ngx_str_t;
  typedef intptr_t ngx_int_t;
  typedef uintptr_t ngx_uint_t;
]]
local addr = ffi.new("unsigned char[16]")
local ipmatcher = {
  parse_ipv4 = function(ip) return type(ip) == "string" and ffi.C.inet_pton(2, ip, addr) == 1 end,
  parse_ipv6 = function(ip)
    if type(ip) ~= "string" then return false end
    return ffi.C.inet_pton(10, (ip:gsub("^%[(.*)%]$", "%1")), addr) == 1
  end,
}

-- UUIDs for resty.jit-uuid ------------------------------------------------------------------------------
-- Validity is checked as jit-uuid does (the 8-4-4-4-12 hex form). A v5 id (declarative_config gives one
-- to an entity without an id, from its cache key) only needs to be the same for the same name and
-- different for different ones: a 128-bit FNV-style hash stands in for SHA-1.
local function hash_hex(s, seed)
  local h = seed
  for i = 1, #s do
    h = bit.bxor(h, s:byte(i))
    h = bit.tobit(h * 16777619 % 4294967296)
  end
  return bit.tohex(h, 8)
end
local uuid_counter = 0
local jit_uuid = {
  is_valid = function(s)
    return type(s) == "string"
      and s:match("^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$") ~= nil
  end,
  generate_v4 = function()
    uuid_counter = uuid_counter + 1
    local h = hash_hex(tostring(uuid_counter), 2166136261) .. hash_hex(tostring(uuid_counter), 1) .. "00000000"
      .. string.format("%08x", uuid_counter)
    return h:sub(1, 8) .. "-" .. h:sub(9, 12) .. "-4" .. h:sub(14, 16) .. "-8" .. h:sub(18, 20) .. "-" .. h:sub(21, 32)
  end,
  generate_v5 = function(namespace, name)
    local s = namespace .. "\0" .. name
    local h = hash_hex(s, 2166136261) .. hash_hex(s, 16777619) .. hash_hex(s, 33554467) .. hash_hex(s, 7)
    return h:sub(1, 8) .. "-" .. h:sub(9, 12) .. "-5" .. h:sub(14, 16) .. "-8" .. h:sub(18, 20) .. "-" .. h:sub(21, 32)
  end,
  seed = function() end,
}
function jit_uuid.factory_v5(namespace)
  return function(name) return jit_uuid.generate_v5(namespace, name) end
end

-- A value that answers every call and index with itself, for modules nothing validated calls.
local function inert()
  local v
  v = setmetatable({}, { __index = function() return v end, __call = function() return v end })
  return v
end

local function hex(s) return (s:gsub(".", function(c) return string.format("%02x", c:byte()) end)) end

-- resty.sha1/sha256 (basic-auth hashes a password when `_transform` is true): the openssl command.
local function digest_module(alg)
  return {
    new = function()
      local parts = {}
      return {
        update = function(_, s) parts[#parts + 1] = s; return true end,
        final = function()
          local out = run("openssl dgst -" .. alg .. " -r %IN", table.concat(parts)) or ""
          return (out:match("^(%x+)") or ""):gsub("%x%x", function(b) return string.char(tonumber(b, 16)) end)
        end,
      }
    end,
  }
end

-- The modules given before Kong's own are looked for.
M.modules = {
  ["rex_pcre2"] = rex,
  ["resty.openssl.x509"] = x509,
  ["resty.openssl.pkey"] = pkey,
  ["resty.ipmatcher"] = ipmatcher,
  ["resty.jit-uuid"] = jit_uuid,
  ["resty.string"] = { to_hex = hex },
  ["resty.sha1"] = digest_module("sha1"),
  -- Linux's open(2) constants (kong.tools.rand reads /dev/urandom with them).
  ["lua_system_constants"] = {
    O_RDONLY = function() return 0 end, O_WRONLY = function() return 1 end, O_RDWR = function() return 2 end,
    O_CREAT = function() return 64 end, O_APPEND = function() return 1024 end,
    S_IRUSR = function() return 256 end, S_IWUSR = function() return 128 end, S_IXUSR = function() return 64 end,
    S_IRGRP = function() return 32 end, S_IWGRP = function() return 16 end, S_IXGRP = function() return 8 end,
    S_IROTH = function() return 4 end, S_IWOTH = function() return 2 end, S_IXOTH = function() return 1 end,
  },
  ["resty.sha256"] = digest_module("sha256"),
  -- JSON-schema fields exist on wasm filters only, which no file here has: the draft id Kong checks at load.
  ["resty.ljsonschema.metaschema"] = { id = "http://json-schema.org/draft-04/schema#" },
  ["table.isarray"] = function(t)
    if type(t) ~= "table" then return false end
    local n = 0
    for _ in pairs(t) do n = n + 1 end
    return n == #t
  end,
  ["table.nkeys"] = function(t) local n = 0 for _ in pairs(t) do n = n + 1 end return n end,
  ["table.isempty"] = function(t) return next(t) == nil end,
  ["table.clone"] = function(t) local c = {} for k, v in pairs(t) do c[k] = v end return c end,
  ["ngx.base64"] = {
    decode_base64url = function(s)
      s = s:gsub("-", "+"):gsub("_", "/")
      return M.ngx.decode_base64(s .. string.rep("=", (4 - #s % 4) % 4))
    end,
  },
}

-- Modules only the runtime side of the loaded files uses (LMDB import, protobuf export, timers,
-- semaphores, the ATC router): inert, and listed by stand_ins().
M.inert_prefixes = { "^resty%.lmdb", "^kong%.concurrency$", "^kong%.tools%.protobuf$", "^pb$", "^protoc$",
  "^ngx%.semaphore$", "^resty%.router", "^kong%.router%.", "^resty%.core", "^resty%.lrucache",
  "^resty%.timerng", "^kong%.runloop%.events$", "^kong%.clustering",
  "^resty%.dns", "^kong%.resty%.dns", "^resty%.http$", "^resty%.counter",
  "^resty%.worker%.events", "^resty%.events", "^resty%.healthcheck", "^kong%.runloop%.plugin_servers",
  "^kong%.runloop%.wasm", "^resty%.aws", "^resty%.openssl", "^ffi%-zlib$", "^resty%.ljsonschema", "^resty%.upload$", "^kong%.api%.",
  "^resty%.gcp", "^resty%.azure" }

function M.inert(name)
  noop_modules[name] = true
  return inert()
end

function M.stand_ins()
  local names = {}
  for k in pairs(noop_modules) do names[#names + 1] = k end
  table.sort(names)
  return names
end

local b64 = {}
do
  local chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
  for i = 1, 64 do b64[chars:sub(i, i)] = i - 1 end
end

-- The ngx table. Logging goes to stderr with --verbose only; time is the real time.
M.ngx = {
  null = cjson.null, -- OpenResty's ngx.null is the same NULL lightuserdata as cjson.null
  re = re,
  config = { subsystem = "http", ngx_lua_version = 10026, prefix = function() return "/tmp/" end,
    is_console = false, debug = false },
  DEBUG = 8, INFO = 7, NOTICE = 6, WARN = 5, ERR = 4, CRIT = 3, ALERT = 2, EMERG = 1, STDERR = 0,
  OK = 0, ERROR = -1, AGAIN = -2, DONE = -4, DECLINED = -5,
  HTTP_OK = 200, HTTP_NOT_FOUND = 404, HTTP_INTERNAL_SERVER_ERROR = 500, HTTP_BAD_REQUEST = 400,
  log = function(level, ...)
    if M.verbose then io.stderr:write("[ngx.log ", level, "] ", table.concat({ ... }), "\n") end
  end,
  time = function() return os.time() end,
  now = function() return os.time() end,
  update_time = function() end,
  today = function() return os.date("!%Y-%m-%d") end,
  localtime = function() return os.date("%Y-%m-%d %H:%M:%S") end,
  utctime = function() return os.date("!%Y-%m-%d %H:%M:%S") end,
  IS_CLI = false,
  get_phase = function() return "init" end,
  sleep = function() end,
  worker = { id = function() return 0 end, pid = function() return 1 end, count = function() return 1 end,
    exiting = function() return false end },
  timer = { at = function() return true end, every = function() return true end },
  thread = inert(), ctx = {}, var = {}, header = {},
  md5 = function(s) return hash_hex(s, 2166136261) .. hash_hex(s, 7) .. hash_hex(s, 11) .. hash_hex(s, 13) end,
  decode_base64 = function(s)
    if type(s) ~= "string" or #s % 4 ~= 0 or s:find("[^%w%+/=]") then return nil end
    local out = {}
    for i = 1, #s, 4 do
      local n, pad = 0, 0
      for j = i, i + 3 do
        local c = s:sub(j, j)
        if c == "=" then pad = pad + 1; n = n * 64 else n = n * 64 + b64[c] end
      end
      local bytes = string.char(bit.band(bit.rshift(n, 16), 255), bit.band(bit.rshift(n, 8), 255), bit.band(n, 255))
      out[#out + 1] = bytes:sub(1, 3 - pad)
    end
    return table.concat(out)
  end,
  encode_base64 = function(s, no_padding)
    local chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    local out = {}
    for i = 1, #s, 3 do
      local a, b, c = s:byte(i, i + 2)
      local n = a * 65536 + (b or 0) * 256 + (c or 0)
      for j = 3, 0, -1 do
        local idx = bit.band(bit.rshift(n, j * 6), 63)
        out[#out + 1] = chars:sub(idx + 1, idx + 1)
      end
      if not c then out[#out] = "=" end
      if not b then out[#out - 1] = "=" end
    end
    local r = table.concat(out)
    return no_padding and (r:gsub("=+$", "")) or r
  end,
  quote_sql_str = function(s) return "'" .. s .. "'" end,
  escape_uri = function(s) return s end,
  unescape_uri = function(s) return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)) end,
}

-- The shared dictionaries of a Kong node's nginx.conf (acme's `shm_name` must name one).
M.ngx.shared = {}
for _, name in ipairs({ "kong", "kong_locks", "kong_healthchecks", "kong_cluster_events",
  "kong_rate_limiting_counters", "kong_core_db_cache", "kong_core_db_cache_miss", "kong_db_cache",
  "kong_db_cache_miss", "kong_secrets", "prometheus_metrics", "kong_vitals_counters" }) do
  M.ngx.shared[name] = inert()
end

-- Any other ngx member (ngx.req, ngx.resp, ...) serves requests only: inert, and listed.
setmetatable(M.ngx, { __index = function(t, k)
  noop_modules["ngx." .. k] = true
  local v = inert()
  rawset(t, k, v)
  return v
end })

return M
