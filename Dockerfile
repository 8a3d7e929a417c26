# The specwatch image: the sidecar container of deploy/kubernetes (docker build -t specwatch .).
# The wheel is built in a throw-away stage; the final image has no compiler or build tools.
# Its analysis is compiled by mypyc (setup.py, SPECWATCH_COMPILE=1): the same source, about 60%
# of the CPU. mypyc type-checks what it compiles against the runtime dependencies, so they are
# installed in this stage first, and the build runs without isolation (tools/build_compiled.sh
# is the same build; tests/e2e/test_wheel.py runs its wheel). python:3.11 has the C compiler.
FROM python:3.11 AS build
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY agent ./agent
RUN pip install --no-cache-dir 'setuptools>=77' wheel 'mypy==2.4.1' . \
    && SPECWATCH_COMPILE=1 pip wheel --no-cache-dir --no-build-isolation --no-deps \
        --wheel-dir /wheels .

FROM python:3.11-slim
RUN useradd --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin specwatch
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER 10001:10001
EXPOSE 8000 9400
ENTRYPOINT ["specwatch"]
CMD ["proxy", "--host", "0.0.0.0"]
