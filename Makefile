# mnemo - build, test, fuzz, benchmark and install.
#
#   make                      library (static + shared) and the mnemo binary in build/
#   make test                 the whole test suite (closing line: N passed, N failed)
#   make SANITIZE=address,undefined test
#   make valgrind             the test suite under valgrind
#   make fuzz                 libFuzzer harnesses (clang) in build/fuzz/
#   make bench                benchmark tools in build/bench/
#   make install PREFIX=/usr/local
#   make lint                 banned functions, cppcheck
#   make format               clang-format every C file

CC       ?= cc
PREFIX   ?= /usr/local
DESTDIR  ?=
# libcurl is loaded at run time, when a remote embedding provider is first
# used (src/embed/curl_dl.c), and libpq when PostgreSQL is first used (src/store/postgres/pg.c):
# only their headers are needed to build.
PKGS      = sqlite3 libutf8proc jansson libxxhash zlib
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) libcurl libpq)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS)) -lstemmer -lm -lpthread -ldl
# The command links these statically when their archives are installed (Debian's
# -dev packages ship them): a process that starts once per search then skips
# most of the dynamic loader's work (symbol lookups and relocations: about
# 0.45 ms of a 5.9 ms search; docs/benchmarks.md). It stays position-independent
# (address randomization for the daemon). STATIC_DEPS=0 links them as shared
# libraries; the library itself is unchanged.
STATIC_DEPS ?= $(if $(SANITIZE),0,1)
STATIC_LIBS  = sqlite3 utf8proc jansson xxhash stemmer z
ifeq ($(STATIC_DEPS),1)
static_found := $(foreach l,$(STATIC_LIBS),$(if $(wildcard $(shell $(CC) -print-file-name=lib$(l).a)),$(l)))
CLI_LIBS   := -Wl,-Bstatic $(addprefix -l,$(static_found)) -Wl,-Bdynamic \
              $(addprefix -l,$(filter-out $(static_found),$(STATIC_LIBS))) -lm -lpthread -ldl
else
CLI_LIBS   := $(PKG_LIBS)
endif

WARN = -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
       -Wformat=2 -Wvla -Wimplicit-fallthrough -Wconversion -Wno-sign-conversion
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
# Hidden by default: libmnemo.so exports only what mnemo.h marks MNEMO_API.
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -fPIC -fvisibility=hidden -Iinclude -Isrc \
             $(PKG_CFLAGS)
LDFLAGS ?=

ifneq ($(WERROR),)
ALL_CFLAGS += -Werror
endif

comma := ,
BUILD ?= build
ifneq ($(SANITIZE),)
BUILD := build/san-$(subst $(comma),-,$(SANITIZE))
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
OPT = -O1
endif

# ---- sources: the one list ------------------------------------------------
# The library, layer by layer, bottom up (docs/design.md): each layer
# includes and calls only itself and the layers listed before it.
LIB_SRC = src/util/buf.c src/util/utf8.c src/util/hash.c src/util/map.c src/util/glob.c src/util/sha.c \
          src/util/jsonvec.c src/util/time.c src/util/lock.c src/util/io.c src/util/dl.c \
          src/util/errcode.c \
          src/text/tok.c src/text/bm25.c src/text/chunk.c src/text/query.c src/text/dsn.c \
          src/text/mfilter.c src/text/secrets.c src/text/sanitize.c src/text/transcript.c \
          src/text/snippet.c src/text/media.c \
          src/embed/vec.c src/embed/model.c src/embed/gemm.c src/embed/safetensors.c \
          src/embed/wordpiece.c src/embed/vocab.c src/embed/unigram.c src/embed/pull.c src/embed/gguf.c src/embed/spm.c src/embed/tpool.c src/embed/gemma.c src/embed/bert.c src/embed/embed.c src/embed/curl_dl.c \
          src/embed/embed_http.c src/embed/sigv4.c src/embed/bedrock.c src/embed/copilot.c \
          src/engine/config.c src/engine/core.c src/engine/walk.c src/engine/prep.c \
          src/engine/sync.c src/engine/memory.c src/engine/mport.c src/engine/msearch.c src/engine/mrecall.c \
          src/engine/provider.c src/engine/calib.c src/engine/rank.c src/engine/recall.c src/engine/results.c \
          src/engine/search.c src/engine/allsearch.c src/engine/mrec.c src/engine/memjson.c \
          src/engine/get.c src/engine/files.c src/engine/watch.c src/engine/blockmax.c \
          src/store/sqlite/recover.c src/store/sqlite/fts.c src/store/sqlite/lite_filter.c \
          src/store/sqlite/store.c src/store/sqlite/store_write.c src/store/sqlite/lite.c \
          src/store/sqlite/lite_sync.c src/store/sqlite/memlite.c src/store/sqlite/memvec.c \
          src/store/sqlite/lite_msearch.c src/store/sqlite/lite_mpost.c src/store/sqlite/vectors.c \
          src/store/sqlite/lite_recall.c src/store/sqlite/lite_search.c \
          src/store/sqlite/status.c src/store/sqlite/kwpost.c \
          src/store/postgres/pg.c src/store/postgres/pgsource.c src/store/postgres/pgconn.c src/store/postgres/pgback.c \
          src/store/postgres/pgschema.c src/store/postgres/pgquery.c src/store/postgres/pgroute.c src/store/postgres/pgstore.c \
          src/store/postgres/pgsync.c src/store/postgres/pgsearch.c \
          src/store/postgres/pgkeyword.c src/store/postgres/pgmaxscore.c src/store/postgres/pgpost.c \
          src/store/postgres/pgnpost.c \
          src/store/postgres/pgmem.c src/store/postgres/pgmpost.c \
          src/store/postgres/pgmwrite.c src/store/postgres/pgmsearch.c \
          src/store/postgres/pgtext.c \
          src/mnemo.c
LIB_HDR = $(shell find src -name '*.h')
CLI_SRC = cli/main.c cli/cli.c cli/cmd_index.c cli/cmd_search.c cli/cmd_get.c \
          cli/cmd_status.c cli/cmd_config.c cli/cmd_tokenize.c cli/cmd_embed.c cli/cmd_model.c cli/cmd_recall.c \
          cli/cmd_memory.c cli/cmd_skill.c cli/cmd_hook.c \
          cli/api.c cli/cmd_serve.c cli/mcp.c cli/cmd_mcp.c cli/nudge.c cli/cmd_doctor.c \
          cli/complete.c cli/browse.c cli/cmd_ui.c
# The page mnemo serve answers at / (docs/ui.md): web/'s files as C arrays.
WEB_FILES = $(sort $(wildcard web/*))
TEST_SRC = tests/runner.c tests/util.c tests/test_util.c tests/test_tok.c tests/test_chunk.c \
           tests/test_config.c tests/test_sync.c tests/test_search.c tests/test_get.c \
           tests/test_bad_input.c tests/test_cli.c tests/test_fuzz_replay.c \
           tests/provider_server.c tests/test_vec.c tests/test_model.c tests/test_embed.c \
           tests/test_hybrid.c tests/test_bedrock.c tests/test_copilot.c tests/test_meaning.c tests/test_local.c tests/test_pull.c tests/test_rank.c tests/test_transcript.c \
           tests/test_mfilter.c tests/test_memory.c \
           tests/test_nudge.c tests/test_serve.c tests/test_mcp.c tests/test_openclaw.c tests/test_media.c \
           tests/pg_server.c tests/test_pgsource.c tests/backend.c tests/test_pgmem.c tests/test_pgbackend.c tests/test_pgreplica.c \
           tests/test_pgstore.c tests/test_safety.c tests/test_writes.c tests/test_damage.c tests/test_cliux.c \
           tests/test_typed.c tests/test_python.c tests/test_ui.c tests/test_files.c
FUZZ_HARNESS = fuzz/fuzz_tok.c fuzz/fuzz_chunk.c fuzz/fuzz_query.c fuzz/fuzz_jsonvec.c \
               fuzz/fuzz_filter.c fuzz/fuzz_text.c fuzz/fuzz_records.c fuzz/fuzz_recover.c
# Harnesses of the command's own parsers (cli/): they link it but for main.c.
FUZZ_CLI = fuzz/fuzz_cli.c
CLI_PARTS = $(filter-out cli/main.c,$(CLI_SRC))
BENCH_SRC = bench/gen.c bench/latency.c bench/vecbench.c bench/searchbench.c bench/embedbench.c bench/membench.c bench/loadbench.c bench/pgbench_source.c bench/localbench.c bench/readbench.c bench/writebench.c bench/refreshbench.c

LIB_OBJ  = $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ  = $(CLI_SRC:%.c=$(BUILD)/%.o) $(BUILD)/cli/web_files.o
TEST_OBJ = $(TEST_SRC:%.c=$(BUILD)/%.o) $(FUZZ_HARNESS:%.c=$(BUILD)/%.o) \
           $(FUZZ_CLI:%.c=$(BUILD)/%.o) $(CLI_PARTS:%.c=$(BUILD)/%.o) $(BUILD)/cli/web_files.o

VERSION = $(shell sed -n 's/^#define MNEMO_VERSION "\(.*\)"/\1/p' include/mnemo.h)
SONAME  = libmnemo.so.0

.PHONY: all test valgrind fuzz bench install uninstall clean lint format demo completions golden-help \
        python
all: $(BUILD)/mnemo $(BUILD)/libmnemo.a $(BUILD)/libmnemo.so

$(BUILD)/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

%/cli/web_files.c: $(WEB_FILES) web scripts/embed-web
	@mkdir -p $(dir $@)
	scripts/embed-web $@ $(WEB_FILES)
$(BUILD)/cli/web_files.o: $(BUILD)/cli/web_files.c
	$(CC) $(ALL_CFLAGS) -Icli -c $< -o $@

$(BUILD)/libmnemo.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/libmnemo.so: $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,$(SONAME) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD)/mnemo: $(CLI_OBJ) $(BUILD)/libmnemo.a
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/libmnemo.a $(CLI_LIBS)

# The test binary runs the CLI it was built with (golden tests).
TEST_PKGS = libmicrohttpd
$(BUILD)/tests/%.o: ALL_CFLAGS += -Ifuzz -Icli -DMNEMO_BIN='"$(abspath $(BUILD))/mnemo"' \
                                  -DMNEMO_SRC='"$(abspath .)"' $(shell pkg-config --cflags $(TEST_PKGS))
$(BUILD)/fuzz/%.o: ALL_CFLAGS += -DLLVMFuzzerTestOneInput=$(notdir $*)_one -Icli
$(BUILD)/tests/run: $(TEST_OBJ) $(BUILD)/libmnemo.a
	$(CC) $(LDFLAGS) -o $@ $(TEST_OBJ) $(BUILD)/libmnemo.a $(PKG_LIBS) \
	  $(shell pkg-config --libs $(TEST_PKGS))

# The completion scripts in completions/ are the command's own output, made
# from its option tables; tests/test_cliux.c fails when they drift.
completions: $(BUILD)/mnemo
	$(BUILD)/mnemo completion bash > completions/mnemo.bash
	$(BUILD)/mnemo completion zsh > completions/_mnemo

# tests/golden/help/: every command's --help, compared byte for byte by
# tests/test_cliux.c.
golden-help: $(BUILD)/mnemo
	scripts/golden-help $(BUILD)/mnemo tests/golden/help

test: $(BUILD)/tests/run $(BUILD)/mnemo $(BUILD)/libmnemo.so
	@scripts/test-deps
	$(BUILD)/tests/run $(T)

valgrind: $(BUILD)/tests/run $(BUILD)/mnemo
	MNEMO_TEST_VALGRIND=1 valgrind --quiet --error-exitcode=99 --leak-check=full \
	  --errors-for-leak-kinds=definite --show-possibly-lost=no --trace-children=no $(BUILD)/tests/run -j1 $(T)

# ---- fuzzing (clang + libFuzzer) ------------------------------------------
# clang's float-cast-overflow check too: GCC's "undefined" does not include it.
CLANG ?= $(shell command -v clang || command -v clang-14 || echo clang)
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -g -O1 \
              -fsanitize=fuzzer,address,undefined,float-cast-overflow -fno-sanitize-recover=all \
              -Iinclude -Isrc \
              $(PKG_CFLAGS)
fuzz: $(FUZZ_HARNESS:fuzz/%.c=build/fuzz/%) $(FUZZ_CLI:fuzz/%.c=build/fuzz/%)
$(FUZZ_CLI:fuzz/%.c=build/fuzz/%): build/fuzz/%: fuzz/%.c $(LIB_SRC) $(CLI_PARTS) build/fuzz/cli/web_files.c
	@mkdir -p build/fuzz
	$(CLANG) $(FUZZ_CFLAGS) -Icli -o $@ $< $(CLI_PARTS) build/fuzz/cli/web_files.c $(LIB_SRC) $(PKG_LIBS)
build/fuzz/%: fuzz/%.c $(LIB_SRC)
	@mkdir -p build/fuzz
	$(CLANG) $(FUZZ_CFLAGS) -o $@ $< $(LIB_SRC) $(PKG_LIBS)

# ---- benchmarks -------------------------------------------------------------
bench: $(BUILD)/mnemo $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
$(BUILD)/bench/%: bench/%.c $(BUILD)/libmnemo.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libmnemo.a $(PKG_LIBS)
# The embedding and write benchmarks run against the provider test server.
$(BUILD)/bench/embedbench $(BUILD)/bench/writebench: $(BUILD)/bench/%: bench/%.c tests/provider_server.c $(BUILD)/libmnemo.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests $(shell pkg-config --cflags $(TEST_PKGS)) $(LDFLAGS) -o $@ \
	  $< tests/provider_server.c $(BUILD)/libmnemo.a $(PKG_LIBS) \
	  $(shell pkg-config --libs $(TEST_PKGS) libcurl)

# ---- the Python package (python/, docs/python.md) --------------------------
# A wheel of the package in $(BUILD)/python-dist/ (pip fetches setuptools).
PYTHON ?= python3
python:
	$(PYTHON) -m pip wheel --no-deps -w $(BUILD)/python-dist ./python

# ---- the README's first command ends here -----------------------------------
demo: $(BUILD)/mnemo
	$(BUILD)/mnemo --workspace examples/memory --db $(BUILD)/demo.sqlite index
	$(BUILD)/mnemo --workspace examples/memory --db $(BUILD)/demo.sqlite search -n 3 "postgres migration"
	$(BUILD)/mnemo --workspace examples/memory --db $(BUILD)/demo.sqlite search -n 1 数据库迁移

# ---- install ----------------------------------------------------------------
# Besides the program and library: the man page, bash and zsh completion,
# and under share/mnemo/ the OpenClaw plugin with its hook pack (installed
# into OpenClaw by share/mnemo/openclaw/install.sh) and the memory_search skill.
SHARE         = $(DESTDIR)$(PREFIX)/share
OPENCLAW_FILES = $(shell cd integrations/openclaw && find . -type f ! -path '*/node_modules/*' \
                   ! -name '.*' | sed 's|^\./||' | sort)
SKILL_FILES    = $(shell cd integrations/skills && find . -type f ! -name '.*' | sed 's|^\./||' | sort)
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(BUILD)/mnemo $(DESTDIR)$(PREFIX)/bin/mnemo
	install -m 644 $(BUILD)/libmnemo.a $(DESTDIR)$(PREFIX)/lib/libmnemo.a
	install -m 755 $(BUILD)/libmnemo.so $(DESTDIR)$(PREFIX)/lib/libmnemo.so.$(VERSION)
	ln -sf libmnemo.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libmnemo.so
	install -m 644 include/mnemo.h $(DESTDIR)$(PREFIX)/include/mnemo.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' mnemo.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/mnemo.pc
	install -d $(SHARE)/man/man1 $(SHARE)/bash-completion/completions $(SHARE)/zsh/site-functions
	install -m 644 man/mnemo.1 $(SHARE)/man/man1/mnemo.1
	install -m 644 completions/mnemo.bash $(SHARE)/bash-completion/completions/mnemo
	install -m 644 completions/_mnemo $(SHARE)/zsh/site-functions/_mnemo
	@for f in $(OPENCLAW_FILES); do \
	  mode=644; case $$f in *.sh) mode=755 ;; esac; \
	  echo "install -D -m $$mode integrations/openclaw/$$f $(SHARE)/mnemo/openclaw/$$f"; \
	  install -D -m $$mode integrations/openclaw/$$f $(SHARE)/mnemo/openclaw/$$f || exit 1; \
	done
	@for f in $(SKILL_FILES); do \
	  echo "install -D -m 644 integrations/skills/$$f $(SHARE)/mnemo/skills/$$f"; \
	  install -D -m 644 integrations/skills/$$f $(SHARE)/mnemo/skills/$$f || exit 1; \
	done

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/mnemo $(DESTDIR)$(PREFIX)/lib/libmnemo.a \
	  $(DESTDIR)$(PREFIX)/lib/libmnemo.so* $(DESTDIR)$(PREFIX)/include/mnemo.h \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig/mnemo.pc $(SHARE)/man/man1/mnemo.1 \
	  $(SHARE)/bash-completion/completions/mnemo $(SHARE)/zsh/site-functions/_mnemo
	rm -rf $(SHARE)/mnemo

# ---- checks -----------------------------------------------------------------
BANNED = '\b(strcpy|strcat|sprintf|vsprintf|gets|atoi|atol|atof|strtok)\s*\('
lint:
	@! grep -nE $(BANNED) $(LIB_SRC) $(CLI_SRC) $(LIB_HDR) || \
	  (echo "banned functions used (see above)"; exit 1)
	@scripts/check-api-calls
	@scripts/check-layers
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability --inline-suppr \
	  --suppress=unknownMacro \
	  -D_GNU_SOURCE -Iinclude -Isrc src cli

format:
	clang-format -i $(LIB_SRC) $(CLI_SRC) $(TEST_SRC) $(FUZZ_HARNESS) $(BENCH_SRC) \
	  include/*.h $(LIB_HDR) cli/*.h tests/*.h

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
