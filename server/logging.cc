#include "server/logging.h"

#include <memory>

#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace warpd::server {

void SetUpLogging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("warpd");
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
  spdlog::level::level_enum lvl = spdlog::level::from_str(level);
  // from_str maps unknown names to off; flags already rejected those.
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace warpd::server
