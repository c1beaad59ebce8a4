# Solves specs against a channel with rattler, installs the result into a
# prefix, and prints what it solved as JSON: name, version, url, sha256, md5.
import asyncio
import json
import os
import sys

import rattler


async def main(channel, prefix, cache, specs):
    records = await rattler.solve([channel], specs, platforms=["linux-64", "noarch"])
    await rattler.install(records, prefix, cache_dir=cache, show_progress=False)
    print(json.dumps([{"name": r.name.normalized, "version": str(r.version), "url": r.url,
                       "sha256": r.sha256.hex() if isinstance(r.sha256, bytes) else str(r.sha256),
                       "md5": r.md5.hex() if isinstance(r.md5, bytes) else str(r.md5)} for r in records]))


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]))
# rattler's native worker threads can still be running while the
# interpreter finalizes, which sometimes aborts the process after the work
# is done: leave without finalizing, the output flushed.
sys.stdout.flush()
os._exit(0)
