# The node-wise EBIC rule for continuous and binary variables (mgm's procedure when every
# predictor is one column, so the group lasso is the lasso), written from its
# description with glmnet for bench/mixed_graph.py: each listed variable regressed on
# all the others by glmnet (Gaussian or binomial, standardize = TRUE, glmnet's default
# path), its penalty chosen by EBIC -2 loglik + J log n + 2 gamma J log(p - 1) (a
# Gaussian's variance profiled out: -2 loglik = n log(2 pi RSS / n) + n).
#   Rscript bench/mixed_glmnet.R DATA.csv TYPES OUT.csv GAMMA NODES
# DATA.csv: continuous columns standardised (sd with 1/n), binary ones 0/1; TYPES a
# string of g and c, one per column; NODES 0-based, comma-separated. Writes OUT.csv with
# node,j,b for every non-zero coefficient of the listed regressions.
suppressMessages(library(glmnet))
args <- commandArgs(TRUE)
x <- as.matrix(read.csv(args[1], header = FALSE))
types <- strsplit(args[2], "")[[1]]
gamma <- as.numeric(args[4])
nodes <- as.integer(strsplit(args[5], ",")[[1]]) + 1
n <- nrow(x); p <- ncol(x)
lmr <- if (n < p - 1) 0.01 else 1e-4
rows <- list()
t0 <- proc.time()[["elapsed"]]
for (i in nodes) {
  y <- x[, i]
  if (types[i] == "g") {
    fit <- glmnet(x[, -i], y, family = "gaussian", lambda.min.ratio = lmr)
    eta <- predict(fit, newx = x[, -i])
    rss <- colSums((y - eta)^2)
    dev <- n * log(2 * pi * rss / n) + n
  } else {
    fit <- glmnet(x[, -i], y, family = "binomial", lambda.min.ratio = lmr)
    eta <- predict(fit, newx = x[, -i], type = "link")
    dev <- -2 * colSums(y * eta - log1p(exp(eta)))
  }
  J <- fit$df
  k <- which.min(dev + J * log(n) + 2 * gamma * J * log(p - 1))
  cf <- as.numeric(coef(fit)[, k])[-1]
  js <- setdiff(seq_len(p), i)
  nz <- which(cf != 0)
  if (length(nz)) rows[[length(rows) + 1]] <- data.frame(node = i - 1, j = js[nz] - 1, b = cf[nz])
}
el <- proc.time()[["elapsed"]] - t0
out <- if (length(rows)) do.call(rbind, rows) else data.frame(node = integer(), j = integer(), b = numeric())
write.csv(out, args[3], row.names = FALSE)
cat(sprintf("R (glmnet) node-wise rule: %d regressions, %.2fs\n", length(nodes), el))
