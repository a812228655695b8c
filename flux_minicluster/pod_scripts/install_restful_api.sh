# shellcheck shell=sh
# The restful-api init container: puts the Flux RESTful API's code on the api volume (MC_RESTFUL_DIR),
# where rank 0's instance.sh runs it. An image that has the server in MC_RESTFUL_INSTALL_DIR is copied
# from; otherwise the server is cloned, and its libraries installed beside it (MC_RESTFUL_LIBRARIES),
# before the broker starts, so that a broker's start never waits on GitHub or PyPI.
set -eu
target=${MC_RESTFUL_DIR:?}
if [ -f "${MC_RESTFUL_INSTALL_DIR:?}/app/main.py" ]; then
  echo "the image has the Flux RESTful API in $MC_RESTFUL_INSTALL_DIR: using it"
  cp -R "$MC_RESTFUL_INSTALL_DIR/." "$target/"
  exit 0
fi
echo "installing the Flux RESTful API (${MC_RESTFUL_REPOSITORY:?}, ${MC_RESTFUL_BRANCH:?})"
git clone --quiet --depth 1 --branch "$MC_RESTFUL_BRANCH" "https://github.com/$MC_RESTFUL_REPOSITORY" "$target"
python3 -m pip install --quiet --no-cache-dir --target "$target/${MC_RESTFUL_LIBRARIES:?}" -r "$target/requirements.txt"
