# The specwatch image: the sidecar container of deploy/kubernetes (docker build -t specwatch .).
# The wheel is built in a throw-away stage; the final image has no compiler or build tools.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY agent ./agent
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11-slim
RUN useradd --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin specwatch
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER 10001:10001
EXPOSE 8000 9400
ENTRYPOINT ["specwatch"]
CMD ["proxy", "--host", "0.0.0.0"]
