#!/usr/bin/env bash
# Deploy infra/template.yaml to a running LocalStack (docker compose -f localstack/docker-compose.yml
# up -d), then call the API once. Needs the SAM CLI and its LocalStack wrapper:
#   pip install aws-sam-cli aws-sam-cli-local
set -euo pipefail
cd "$(dirname "$0")/.."

stack=${STACK_NAME:-tidelog}
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=${AWS_DEFAULT_REGION:-us-east-1}
endpoint=${LOCALSTACK_ENDPOINT:-http://localhost:4566}

for tool in samlocal curl; do
  command -v "$tool" >/dev/null || { echo "deploy.sh: $tool not found (pip install aws-sam-cli aws-sam-cli-local)" >&2; exit 1; }
done
curl -fsS "$endpoint/_localstack/health" >/dev/null || {
  echo "deploy.sh: LocalStack is not answering at $endpoint; start it with" >&2
  echo "  docker compose -f localstack/docker-compose.yml up -d" >&2
  exit 1
}

samlocal build --template infra/template.yaml --use-container
samlocal deploy --stack-name "$stack" --resolve-s3 --no-confirm-changeset \
  --capabilities CAPABILITY_IAM CAPABILITY_AUTO_EXPAND

api_id=$(python3 - "$endpoint" "$stack" <<'PY'
import sys, boto3
cf = boto3.client("cloudformation", endpoint_url=sys.argv[1])
resources = cf.describe_stack_resources(StackName=sys.argv[2])["StackResources"]
print(next(r["PhysicalResourceId"] for r in resources if r["LogicalResourceId"] == "Api"))
PY
)
base="$endpoint/restapis/$api_id/live/_user_request_"
echo "tidelog on LocalStack: $base"
curl -fsS "$base/v1/cluster"; echo
