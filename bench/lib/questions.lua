-- bench/lib/questions.lua - wrk as the question clients of
-- bench/retrieval_service.sh (CLIENT=wrk): each wrk thread is one client on
-- one keep-alive connection (run it with as many threads as connections),
-- asking QUESTIONS questions one after the other as the Perl clients do:
-- POST /dataset/{id}/question, then GET ?wait=5 until the question is no
-- longer processing.  wrk's C and LuaJIT spend a fraction of the CPU that
-- the Perl clients do, CPU the service gets on a two-CPU machine.
--
-- Arguments (after wrk's --): dataset id, a file of question bodies (one
-- JSON object a line), questions per client.  BENCH_AUTH holds the
-- Authorization header's value (kept out of the process's arguments).
-- Prints, once every client is done: "q <latency ms> <elapsed_ms>" for
-- each question answered (POST sent to the success answer read, and the
-- answer's elapsed_ms), "err <what>" for each that was not, and
-- "span <first POST> <last answer>" in seconds of the monotonic clock.
local ffi = require("ffi")
ffi.cdef [[
struct bench_timespec { long tv_sec; long tv_nsec; };
int clock_gettime(int clk, struct bench_timespec *ts);
]]
local ts = ffi.new("struct bench_timespec")
local function now()
	ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
	return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local threads = {}

function setup(thread)
	threads[#threads + 1] = thread
	thread:set("client", #threads)
end

local bodies, post_path, get_prefix, headers, wanted
local qid, t_post, gets = nil, 0, 0
lat, errs, first, last = {}, {}, 0, 0   -- read by done(), so global

function init(args)
	local id, file = args[1], args[2]
	wanted = tonumber(args[3])
	bodies = {}
	for l in io.lines(file) do bodies[#bodies + 1] = l end
	assert(#bodies > 0 and wanted and wanted > 0, "usage: -- dataset_id bodies_file questions")
	math.randomseed(client * 7919)
	post_path = "/dataset/" .. id .. "/question"
	get_prefix = post_path .. "/"
	headers = { ["Authorization"] = os.getenv("BENCH_AUTH"),
	            ["Content-Type"] = "application/json" }
end

function request()
	if qid == nil then
		t_post = now()
		if first == 0 then first = t_post end
		return wrk.format("POST", post_path, headers, bodies[math.random(#bodies)])
	end
	return wrk.format("GET", get_prefix .. qid .. "?wait=5", headers)
end

local function finished()
	qid = nil
	if #lat + #errs >= wanted then
		wrk.thread:stop()
	end
end

function response(status, _, body)
	if qid == nil then
		qid = status == 200 and body:match('"question_id":"([0-9a-f-]+)"') or nil
		gets = 0
		if qid == nil then
			errs[#errs + 1] = "POST " .. status
			finished()
		end
		return
	end
	-- Inside JSON strings quotes are escaped: the first top-level
	-- "status" is the question's.
	local st = status == 200 and body:match('"status":"(%w+)"') or ""
	gets = gets + 1
	if st == "processing" and gets < 10 then return end
	if st == "success" then
		last = now()
		lat[#lat + 1] = string.format("%.3f %s", (last - t_post) * 1000,
		                              body:match('"elapsed_ms":([0-9.]+)') or "-1")
	else
		errs[#errs + 1] = "GET " .. status .. " " .. st
	end
	finished()
end

function done()
	local lo, hi = math.huge, 0
	for _, t in ipairs(threads) do
		for _, l in ipairs(t:get("lat")) do print("q " .. l) end
		for _, e in ipairs(t:get("errs")) do print("err " .. e) end
		local f, l = t:get("first"), t:get("last")
		if f > 0 and f < lo then lo = f end
		if l > hi then hi = l end
	end
	print(string.format("span %.6f %.6f", lo, hi))
end
